// Small DOM helpers for the compliance console. Every piece of data reaches the page
// as text (textContent, attributes), never as HTML: alerts carry chat excerpts and
// other text players wrote.

/**
 * Make an element: h("a", {href: "#/x", class: "card"}, "text", child, [more]).
 * Attributes starting with "on" are event listeners; null, undefined and false
 * attributes and children are left out.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "value" || name === "checked" || name === "disabled") {
      element[name] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's content. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

/** A definition list from [term, description] pairs (descriptions may be nodes). */
export function details(pairs, attributes = {}) {
  return h("dl", { class: "facts", ...attributes },
    pairs.filter(([, value]) => value !== null && value !== undefined && value !== "")
      .map(([term, value]) => h("div", {}, h("dt", {}, term), h("dd", {}, value))));
}

/** The text of a form field by name, trimmed. */
export function field(form, name) {
  const element = form.elements.namedItem(name);
  return element ? String(element.value || "").trim() : "";
}

/** Say something to screen reader users (and show it) in the page's status line. */
export function announce(message, { error = false } = {}) {
  const line = document.getElementById("status");
  if (!line) return;
  line.classList.toggle("error", error);
  line.textContent = message;
}

/** A message shown where an action failed, read out at once (role="alert"). */
export function problem(message) {
  return h("p", { class: "problem", role: "alert" }, message);
}

/**
 * Run a form's action with its submit button disabled while it runs; the action's
 * error is shown in the form (role="alert"), not thrown.
 */
export function submitting(form, action) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const buttons = [...form.querySelectorAll("button")];
    buttons.forEach((button) => { button.disabled = true; });
    form.querySelector(".problem")?.remove();
    form.setAttribute("aria-busy", "true");
    try {
      await action(event.submitter || null);
    } catch (error) {
      form.append(problem(error.message || String(error)));
    } finally {
      form.removeAttribute("aria-busy");
      buttons.forEach((button) => { button.disabled = false; });
    }
  });
  return form;
}

/** An id shortened for a heading (the whole id stays in the page as text). */
export function short(id) {
  return String(id || "").slice(0, 8);
}
