// Small DOM helpers shared by the views: elements, forms with labels, messages.
import { randomId } from "/js/api.js";

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

let fieldIds = 0;

// A labelled input (or select, with `options`: [[value, text], ...]).
export function field(label, name, attrs = {}, options = null) {
  const id = `f${++fieldIds}`;
  const input = options
    ? h("select", { id, name, ...attrs }, options.map(([v, t]) => h("option", { value: v }, t)))
    : h("input", { id, name, ...attrs });
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

// A form whose submit runs `action(values)`; errors and successes go to its message line.
export function form(title, fields, submitText, action) {
  const message = h("p", { class: "message", role: "alert", "aria-live": "assertive" });
  const button = h("button", { type: "submit" }, submitText);
  const node = h("form", { "aria-label": title }, h("h3", {}, title), fields, button, message);
  node.addEventListener("submit", async (event) => {
    event.preventDefault();
    message.textContent = "";
    message.className = "message";
    button.disabled = true;
    try {
      const done = await action(Object.fromEntries(new FormData(node).entries()));
      if (typeof done === "string") {
        message.textContent = done;
        message.classList.add("ok");
      }
    } catch (error) {
      message.textContent = error.message;
      message.classList.add("error");
    } finally {
      button.disabled = false;
    }
  });
  return node;
}

export function say(text) {
  document.getElementById("status").textContent = text;
}

export function key() {
  return randomId();
}

// "12.50" -> "1250" (minor units as the API's string); refuses more than two decimals.
export function toMinor(text) {
  const match = /^\s*(\d+)(?:[.,](\d{1,2}))?\s*$/.exec(text);
  if (!match) throw new Error(`"${text}" is not an amount such as 10 or 12.50`);
  return String(Number(match[1]) * 100 + Number((match[2] || "0").padEnd(2, "0")));
}

export function enumText(value, prefix) {
  return String(value || "").replace(prefix, "").toLowerCase().replaceAll("_", " ");
}
