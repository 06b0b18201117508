// The SVG board, drawn from the viewer's side: the viewer's home board bottom right,
// their checkers moving from 24 down to 1, the opponent's point q shown as the
// viewer's 25 - q. Points, the bar and the bear-off tray are buttons (click, Enter or
// Space; or drag a checker onto a point), each labelled for screen readers.
import { BAR, OFF } from "/js/position.js";

const NS = "http://www.w3.org/2000/svg";
const W = 20; // point width
const LEFT = 10;
const BAR_X = LEFT + 6 * W;
const TRAY_X = BAR_X + W + 6 * W + 6;
const TOP = 10;
const BOTTOM = 210;
const R = 8.5;

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(NS, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (parent) parent.appendChild(node);
  return node;
}

// Column 0..11 from the left and whether the point is on the top row.
function place(point) {
  if (point <= 12) return { col: 12 - point, top: false };
  return { col: point - 13, top: true };
}

function columnX(col) {
  return col < 6 ? LEFT + col * W : BAR_X + W + (col - 6) * W;
}

function stack(group, cx, top, count, fill, stroke) {
  const shown = Math.min(count, 5);
  for (let i = 0; i < shown; i++) {
    const cy = top ? TOP + R + i * 2 * R : BOTTOM - R - i * 2 * R;
    el("circle", { cx, cy, r: R - 0.5, fill, stroke, "stroke-width": 1, class: "checker" }, group);
  }
  if (count > 5) {
    const cy = top ? TOP + R + 4 * 2 * R : BOTTOM - R - 4 * 2 * R;
    const label = el("text", { x: cx, y: cy + 3.5, "text-anchor": "middle", class: "count" }, group);
    label.textContent = String(count);
  }
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// view: { mine, theirs } (25 counts each, index 24 = bar, from each side's own view),
// dice, cube {value, owner: "me"|"them"|""}, selected (a point or null), targets (set of
// points a step may go to), movable (set of points a checker may leave now).
// onPoint(point) is called for a click, Enter/Space, or a drag's two ends.
export function renderBoard(svg, view, onPoint) {
  svg.replaceChildren();
  svg.setAttribute("viewBox", "0 0 300 220");
  el("rect", { x: 0, y: 0, width: 300, height: 220, rx: 6, class: "frame" }, svg);
  el("rect", { x: LEFT, y: TOP, width: 12 * W + W, height: BOTTOM - TOP, class: "felt" }, svg);
  el("rect", { x: BAR_X, y: TOP, width: W, height: BOTTOM - TOP, class: "bar" }, svg);
  el("rect", { x: TRAY_X, y: TOP, width: 22, height: BOTTOM - TOP, class: "tray" }, svg);
  const interactive = Boolean(onPoint);

  const button = (point, label, shape) => {
    const g = el("g", { class: "spot", "data-point": point, "aria-label": label }, svg);
    if (interactive) {
      g.setAttribute("role", "button");
      g.setAttribute("tabindex", view.movable.has(point) || view.targets.has(point) ? "0" : "-1");
    }
    if (view.selected === point) g.classList.add("selected");
    if (view.targets.has(point)) g.classList.add("target");
    if (view.movable.has(point)) g.classList.add("movable");
    shape(g);
    return g;
  };

  for (let point = 1; point <= 24; point++) {
    const { col, top } = place(point);
    const x = columnX(col);
    const mine = view.mine[point - 1];
    const theirs = view.theirs[24 - point];
    const who = mine ? `${plural(mine, "checker")} of yours` :
      theirs ? `${plural(theirs, "checker")} of your opponent's` : "empty";
    button(point, `point ${point}, ${who}`, (g) => {
      const tip = top ? TOP + 80 : BOTTOM - 80;
      const base = top ? TOP : BOTTOM;
      el("polygon", { points: `${x},${base} ${x + W},${base} ${x + W / 2},${tip}`,
                      class: `point ${(point % 2) ? "odd" : "even"}` }, g);
      el("rect", { x, y: top ? TOP : BOTTOM - 100, width: W, height: 100, class: "hit" }, g);
      if (mine) stack(g, x + W / 2, top, mine, "var(--mine)", "var(--mine-edge)");
      if (theirs) stack(g, x + W / 2, top, theirs, "var(--theirs)", "var(--theirs-edge)");
      const number = el("text", { x: x + W / 2, y: top ? TOP - 2 : BOTTOM + 8,
                                  "text-anchor": "middle", class: "pointnumber" }, g);
      number.textContent = String(point);
    });
  }
  // The bar: the viewer's checkers in the bottom half, the opponent's in the top half.
  button(BAR, `bar, ${plural(view.mine[24], "checker")} of yours, ` +
              `${plural(view.theirs[24], "checker")} of your opponent's`, (g) => {
    el("rect", { x: BAR_X, y: TOP, width: W, height: BOTTOM - TOP, class: "hit" }, g);
    if (view.theirs[24]) stack(g, BAR_X + W / 2, true, view.theirs[24], "var(--theirs)", "var(--theirs-edge)");
    if (view.mine[24]) stack(g, BAR_X + W / 2, false, view.mine[24], "var(--mine)", "var(--mine-edge)");
  });
  const offMine = 15 - view.mine.reduce((a, b) => a + b, 0);
  const offTheirs = 15 - view.theirs.reduce((a, b) => a + b, 0);
  button(OFF, `bear off tray, ${offMine} of yours off, ${offTheirs} of your opponent's off`, (g) => {
    el("rect", { x: TRAY_X, y: TOP, width: 22, height: BOTTOM - TOP, class: "hit" }, g);
    const mineText = el("text", { x: TRAY_X + 11, y: BOTTOM - 6, "text-anchor": "middle", class: "offcount" }, g);
    mineText.textContent = String(offMine);
    const theirsText = el("text", { x: TRAY_X + 11, y: TOP + 12, "text-anchor": "middle", class: "offcount" }, g);
    theirsText.textContent = String(offTheirs);
  });

  // Dice on the right half, the cube on the bar (at the owner's side, or the middle).
  (view.dice || []).forEach((value, i) => {
    const x = BAR_X + W + 3 * W - 20 + i * 24;
    const g = el("g", { class: "die", "aria-label": `die ${value}` }, svg);
    el("rect", { x, y: 100, width: 18, height: 18, rx: 3 }, g);
    const t = el("text", { x: x + 9, y: 113.5, "text-anchor": "middle" }, g);
    t.textContent = String(value);
  });
  if (view.cube) {
    const y = view.cube.owner === "me" ? BOTTOM - 40 : view.cube.owner === "them" ? TOP + 22 : 101;
    const g = el("g", { class: "cube", "aria-label": `cube ${view.cube.value}` +
                        (view.cube.owner ? `, owned by ${view.cube.owner === "me" ? "you" : "your opponent"}` : ", centred") }, svg);
    el("rect", { x: BAR_X + 1, y, width: 18, height: 18, rx: 2 }, g);
    const t = el("text", { x: BAR_X + 10, y: y + 13, "text-anchor": "middle" }, g);
    t.textContent = String(view.cube.value === 1 ? 64 : view.cube.value);
  }

  if (!interactive) return;
  svg.onclick = (event) => {
    const spot = event.target.closest(".spot");
    if (spot) onPoint(Number(spot.dataset.point));
  };
  svg.onkeydown = (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const spot = event.target.closest(".spot");
    if (spot) {
      event.preventDefault();
      onPoint(Number(spot.dataset.point));
    }
  };
  // Dragging: the press picks the checker, the release over another spot moves it.
  let pressed = null;
  svg.onpointerdown = (event) => {
    const spot = event.target.closest(".spot");
    pressed = spot ? Number(spot.dataset.point) : null;
  };
  svg.onpointerup = (event) => {
    const under = document.elementFromPoint(event.clientX, event.clientY);
    const spot = under && under.closest ? under.closest(".spot") : null;
    const released = spot ? Number(spot.dataset.point) : null;
    if (pressed !== null && released !== null && released !== pressed) {
      svg.dataset.dragged = "1";
      onPoint(pressed);
      onPoint(released);
    }
    pressed = null;
  };
  svg.addEventListener("click", (event) => {
    // A drag already moved; the click that follows it is not a second selection.
    if (svg.dataset.dragged) {
      delete svg.dataset.dragged;
      event.stopImmediatePropagation();
    }
  }, { capture: true });
}
