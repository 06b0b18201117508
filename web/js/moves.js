// Building a play from the game's legal plays (Game.legal_plays: every legal play of the
// roll, deduplicated by result, each with its single-die steps). The player moves one
// checker at a time; a partial play is allowed only while it is part of some legal
// play, and the play can be confirmed only once it is a whole legal play. The server
// checks the play again; this only keeps the board from offering anything else.
import { applyStep } from "/js/position.js";

const key = (step) => `${step.fromPoint}/${step.toPoint}`;

// What is left of `play`'s steps once `made` are taken out, or null if `made` is not
// part of it.
function remaining(play, made) {
  const left = (play.steps || []).map(key);
  for (const step of made) {
    const i = left.indexOf(key(step));
    if (i < 0) return null;
    left.splice(i, 1);
  }
  return left;
}

export class PlayBuilder {
  constructor(plays, mine, theirs) {
    this.plays = plays || [];
    this.start = [mine, theirs];
    this.made = [];
    this.selected = null;
  }

  get position() {
    let [me, them] = this.start;
    for (const s of this.made) [me, them] = applyStep(me, them, s.fromPoint, s.toPoint);
    return { mine: me, theirs: them };
  }

  candidates() {
    return this.plays.filter((p) => remaining(p, this.made) !== null);
  }

  // The whole legal play the steps made so far amount to, or null.
  complete() {
    return this.candidates().find((p) => remaining(p, this.made).length === 0) || null;
  }

  // Step paths from `from` (one or more steps of the same checker, as a candidate play
  // allows), by landing point.
  paths(from) {
    const found = new Map();
    const { mine } = this.position;
    if (from !== 25 && mine[24] > 0) return found; // the bar first
    if (!mine[from - 1]) return found;
    for (const play of this.candidates()) {
      const left = remaining(play, this.made).map((k) => k.split("/").map(Number));
      const walk = (at, used, path) => {
        left.forEach(([a, b], i) => {
          if (a !== at || used.has(i)) return;
          const next = [...path, { fromPoint: a, toPoint: b }];
          if (!found.has(b) || found.get(b).length > next.length) found.set(b, next);
          if (b !== 0) walk(b, new Set([...used, i]), next);
        });
      };
      walk(from, new Set(), []);
    }
    return found;
  }

  movable() {
    const points = new Set();
    for (let p = 1; p <= 25; p++) if (this.paths(p).size) points.add(p);
    return points;
  }

  targets() {
    return this.selected === null ? new Set() : new Set(this.paths(this.selected).keys());
  }

  // A click (or key press) on a point: select a checker, move the selected one there,
  // or change the selection. Returns true if a step was made.
  press(point) {
    if (this.selected !== null) {
      const path = this.paths(this.selected).get(point);
      if (path) {
        this.made.push(...path);
        this.selected = null;
        return true;
      }
    }
    this.selected = this.paths(point).size ? point : null;
    return false;
  }

  undo() {
    this.made = [];
    this.selected = null;
  }
}
