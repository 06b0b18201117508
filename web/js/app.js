// The client's entry point (filled in step by step): signs the tab back in after a reload.
import { api } from "/js/api.js";

const app = document.getElementById("app");
const restored = await api.restore();
app.textContent = restored ? "Signed in." : "Not signed in.";
