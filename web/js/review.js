// After a game: the match record (Jellyfish .mat text, with the provably fair dice
// seeds) and the match analysis: the player's error rate and the worst decisions,
// each shown on a board. The analysis has no positions, so the record is replayed
// here (each play applied to the start position, as position.js does) and each of
// the player's decisions is matched, in order, to the record's actions.
import { api } from "/js/api.js";
import { renderBoard } from "/js/board.js";
import { applyNotation, START } from "/js/position.js";
import { h } from "/js/ui.js";

const MAT_RIGHT_COLUMN = 42; // services/backgammon/matfile.py: _COLUMN

// Per game number and player (0 = left column): the actions in order, each with the
// position before it ([player 0's side, player 1's side], each from its own view).
export function replayRecord(matText) {
  const games = new Map();
  let sides = null;
  let actions = null;
  for (const line of matText.split("\n")) {
    const game = /^\s*Game (\d+)/.exec(line);
    if (game) {
      sides = [START.onRoll.slice(), START.onRoll.slice()];
      actions = [[], []];
      games.set(Number(game[1]), actions);
      continue;
    }
    if (!actions || !/^\s*\d+\)/.test(line)) continue;
    const cells = [line.slice(5, MAT_RIGHT_COLUMN).trim(), line.slice(MAT_RIGHT_COLUMN).trim()];
    cells.forEach((cell, player) => {
      const before = [sides[0].slice(), sides[1].slice()];
      const checker = /^(\d)(\d):\s*(.*)$/.exec(cell);
      if (checker) {
        actions[player].push({ kind: "checker", before, dice: [Number(checker[1]), Number(checker[2])] });
        const [mover, other] = applyNotation(sides[player], sides[1 - player], checker[3]);
        sides[player] = mover;
        sides[1 - player] = other;
      } else if (/^Doubles/.test(cell)) actions[player].push({ kind: "double", before });
      else if (/^(Takes|Beavers)/.test(cell)) actions[player].push({ kind: "take", before });
      else if (/^Drops/.test(cell)) actions[player].push({ kind: "pass", before });
    });
  }
  return games;
}

// The position before each of the player's decisions (null where the record has none).
export function decisionPositions(decisions, games, player) {
  const used = new Map();
  return decisions.map((d) => {
    const actions = (games.get(d.gameNumber) || [[], []])[player];
    const kinds = d.kind === "no_double" ? ["checker"] : d.kind === "double" ? ["double"] : d.kind === "checker" ? ["checker"] : ["take", "pass"];
    const counter = `${d.gameNumber}:${kinds[0]}`;
    let index = used.get(counter) || 0;
    while (index < actions.length && !kinds.includes(actions[index].kind)) index++;
    const found = actions[index];
    // A no_double comes before the roll of the checker play that follows: not consumed.
    if (found && d.kind !== "no_double") used.set(counter, index + 1);
    return found ? found.before : null;
  });
}

function miniBoard(sides, player, dice) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "board small");
  svg.setAttribute("role", "img");
  renderBoard(svg, { mine: sides[player], theirs: sides[1 - player], dice, cube: null,
                     selected: null, targets: new Set(), movable: new Set() }, null);
  return svg;
}

// Cube decisions carry no notation: what was done and what was better, in words.
const CUBE_TEXT = {
  double: "you doubled; not doubling was better",
  no_double: "you did not double; doubling was better",
  take: "you took; passing was better",
  pass: "you passed; taking was better",
};

function decisionText(d) {
  if (d.kind !== "checker") return `before the roll, ${CUBE_TEXT[d.kind] || d.kind}`;
  return `with ${(d.dice || []).join("-")} you played ${d.played || "nothing"}; best was ${d.best}`;
}

function analysisSection(analysis, record, game) {
  const mine = analysis.players.find((p) => p.accountId === api.accountId);
  if (!mine) return h("p", {}, "No analysis for you in this game.");
  const player = game.players.findIndex((p) => p.accountId === api.accountId);
  const decisions = mine.decisionList || [];
  const positions = decisionPositions(decisions, replayRecord(record.matText || ""), player);
  const worst = decisions.map((d, i) => ({ d, before: positions[i] }))
    .filter(({ d }) => d.counted && d.error > 0)
    .sort((a, b) => b.d.error - a.d.error).slice(0, 3);
  const rate = Number(mine.errorPerDecision || 0);
  return h("div", { class: "analysis", id: "analysis" },
    h("h3", {}, "Your analysis"),
    h("dl", { class: "figures" },
      h("dt", {}, "Error rate"), h("dd", { id: "error-rate" },
        `${(rate * 1000).toFixed(1)} millipoints a decision (PR ${Number(mine.performanceRating || 0).toFixed(1)})`),
      h("dt", {}, "Decisions"), h("dd", {}, `${mine.checkerDecisions} checker, ${mine.cubeDecisions} cube`),
      h("dt", {}, "Doubtful / bad / very bad"), h("dd", {}, `${mine.doubtful} / ${mine.bad} / ${mine.veryBad}`),
      h("dt", {}, "Luck"), h("dd", {}, Number(mine.luck || 0).toFixed(3))),
    h("h4", {}, worst.length ? "Your worst decisions" : "No errors: every counted decision was the best"),
    h("ol", { class: "worst" }, worst.map(({ d, before }) => h("li", {},
      h("p", {}, `Game ${d.gameNumber}: ${decisionText(d)} (lost ${Number(d.error).toFixed(3)})`),
      before ? miniBoard(before, player, d.dice) : null))));
}

export function reviewView(game) {
  const gameId = game.gameId;
  const out = h("section", { class: "panel review", "aria-label": "Match record and analysis" },
    h("h3", {}, "Match record"));
  const load = async (tries) => {
    let record;
    try {
      record = await api.get(`/v1/games/${gameId}/record`);
    } catch (error) {
      out.append(h("p", { class: "error" }, error.message));
      return;
    }
    out.append(h("pre", { class: "record", tabindex: 0, "aria-label": "Match record" }, record.matText));
    const pending = h("p", { id: "analysis-pending" }, "The analysis is being prepared…");
    out.append(pending);
    for (let i = 0; i < tries; i++) {
      try {
        const analysis = await api.get(`/v1/games/${gameId}/analysis`);
        pending.replaceWith(analysisSection(analysis, record, game));
        return;
      } catch (error) {
        if (error.code !== 5) {
          pending.textContent = error.message;
          return;
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
    pending.textContent = "The analysis is not ready yet; reload the page later.";
  };
  load(60);
  return out;
}
