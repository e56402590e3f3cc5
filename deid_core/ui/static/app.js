// deid workbench: posts the page's forms and files, puts the server's HTML fragments into their sections.
"use strict";

const WORKSPACE = (() => {  // one workspace per browser tab (sessionStorage is per tab)
  let id = sessionStorage.getItem("deid-workspace");
  if (!id) {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    id = Array.from(bytes, b => b.toString(16).padStart(2, "0")).join("");
    sessionStorage.setItem("deid-workspace", id);
  }
  return id;
})();

function message(origin, text) {
  const box = origin.closest("section").querySelector(".message");
  box.textContent = text || "";
  box.hidden = !text;
}

function show(data, origin) {
  for (const [id, html] of Object.entries(data.sections || {})) {
    const el = document.getElementById(id);
    if (el) el.innerHTML = html;
  }
  if (data.error) message(origin, data.error);
  if (data.poll) setTimeout(() => request("/api/progress", null, origin), 250);
}

async function request(url, body, origin) {
  const section = origin.closest("section");
  section.classList.add("busy");
  let data;
  try {
    const response = await fetch(url, {method: body ? "POST" : "GET", body, headers: {"X-Workspace": WORKSPACE}});
    data = await response.json().catch(() => ({error: `the workbench answered ${response.status}`}));
  } catch (err) {
    data = {error: "the workbench does not answer: is deid ui still running?"};
  }
  section.classList.remove("busy");
  show(data, origin);
}

function post(url, body, origin) {
  message(origin, "");
  return request(url, body, origin);
}

function upload(input) {
  const file = input.files[0];
  if (!file) return;
  const max = Number(document.body.dataset.maxUpload);
  if (file.size > max) {  // the server refuses it too; this spares sending it
    message(input, `${file.name} is larger than the upload limit of ${Math.round(max / 1048576)} MB`);
    input.value = "";
    return;
  }
  const body = new FormData();
  body.append("file", file);
  if (input.dataset.column) body.append("column", input.dataset.column);
  post(input.dataset.upload, body, input).then(() => { input.value = ""; });
}

document.addEventListener("change", event => {
  const el = event.target;
  if (el.type === "file") {
    if (el.dataset.upload) upload(el);
    return;
  }
  const form = el.closest("form[data-auto]");
  if (form) post(form.dataset.post, new URLSearchParams(new FormData(form)), el);
});

document.addEventListener("click", event => {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  event.preventDefault();
  const form = button.closest("form");
  const body = new FormData();
  if (form) for (const [k, v] of new FormData(form)) if (typeof v === "string") body.append(k, v);
  if (button.dataset.node) body.append("node", button.dataset.node);
  post(button.dataset.action, new URLSearchParams(body), button);
});
