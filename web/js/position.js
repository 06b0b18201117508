// GNU Backgammon Position IDs and checker steps, as the game service uses them
// (services/backgammon/position_id.py): 14 base64 characters of an 80-bit key listing,
// for the side not on roll and then the side on roll, each of its 25 slots (points
// 1..24 from that side's view, then the bar) as that many 1-bits and a 0-bit, least
// significant bit first. A side is an array of 25 counts; index 24 is the bar.

export const BAR = 25; // a step's from_point for the bar
export const OFF = 0; // a step's to_point for bearing off

export function decodePositionId(id) {
  const bytes = Uint8Array.from(atob(id + "=="), (c) => c.charCodeAt(0));
  if (bytes.length !== 10) throw new Error(`not a Position ID: ${id}`);
  const sides = [new Array(25).fill(0), new Array(25).fill(0)];
  let side = 0;
  let slot = 0;
  for (let bit = 0; bit < 80 && side < 2; bit++) {
    if ((bytes[bit >> 3] >> (bit & 7)) & 1) {
      sides[side][slot] += 1;
    } else if (++slot === 25) {
      side += 1;
      slot = 0;
    }
  }
  return { onRoll: sides[1], other: sides[0] };
}

export function encodePositionId(onRoll, other) {
  const bytes = new Uint8Array(10);
  let bit = 0;
  for (const side of [other, onRoll]) {
    for (const count of side) {
      for (let i = 0; i < count; i++, bit++) bytes[bit >> 3] |= 1 << (bit & 7);
      bit += 1;
    }
  }
  return btoa(String.fromCharCode(...bytes)).replace(/=+$/, "");
}

// One single-die step of the mover (points from the mover's side, 25 bar, 0 off):
// returns new [mover, opponent] arrays; a lone opposing checker on the landing point
// goes to the opponent's bar (the opponent's point 25 - p is the mover's p).
export function applyStep(mover, opponent, from, to) {
  const me = mover.slice();
  const them = opponent.slice();
  me[from - 1] -= 1;
  if (to !== OFF) {
    me[to - 1] += 1;
    const theirs = 24 - to;
    if (them[theirs] === 1) {
      them[theirs] = 0;
      them[24] += 1;
    }
  }
  return [me, them];
}

export function pipCount(side) {
  return side.reduce((sum, count, index) => sum + count * (index + 1), 0);
}

export const START = decodePositionId("4HPwATDgc/ABMA");

// A play in GNU Backgammon notation ("13/7* 8/7", "bar/22", "6/off", "8/4(2)",
// "24/18*/13") applied to the mover's side: used to replay match records.
export function applyNotation(mover, opponent, notation) {
  let me = mover;
  let them = opponent;
  const point = (text) => (text === "bar" ? BAR : text === "off" ? OFF : Number(text));
  for (const part of notation.trim().split(/\s+/).filter(Boolean)) {
    const repeat = /\((\d)\)$/.exec(part);
    const times = repeat ? Number(repeat[1]) : 1;
    const hops = part.replace(/\(\d\)$/, "").split("/").map((h) => h.replace("*", ""));
    for (let n = 0; n < times; n++) {
      for (let i = 0; i + 1 < hops.length; i++) {
        [me, them] = applyStep(me, them, point(hops[i]), point(hops[i + 1]));
      }
    }
  }
  return [me, them];
}
