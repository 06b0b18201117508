// A list that loads in pages (ListAlerts, ListCases answer a next_page_token): the
// first page now, the next on "Show more", a live summary of how many are shown.

import { h, problem, replace } from "./dom.js";

/**
 * fetchPage(pageToken) -> {items, nextPageToken}; card(item) -> <li>. Returns the
 * nodes to show (summary, list, more button) once the first page is in.
 */
export async function paged({ label, noun, fetchPage, card }) {
  const list = h("ul", { class: "cards", "aria-label": label });
  const summary = h("p", { class: "summary", "aria-live": "polite" });
  const more = h("div", { class: "more" });
  let shown = 0;

  async function load(pageToken) {
    const page = await fetchPage(pageToken);
    list.append(...page.items.map(card));
    shown += page.items.length;
    summary.textContent = shown === 0 ? `No ${noun}s match these filters.`
      : `${shown} ${noun}${shown === 1 ? "" : "s"} shown, newest first.`;
    replace(more, page.nextPageToken
      ? h("button", { type: "button", onclick: async (event) => {
        event.currentTarget.disabled = true;
        try {
          await load(page.nextPageToken);
        } catch (error) {
          event.currentTarget.disabled = false;
          more.append(problem(error.message || String(error)));
        }
      } }, `Show more ${noun}s`)
      : null);
  }

  await load("");
  return { list, nodes: [summary, list, more] };
}
