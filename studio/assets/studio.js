// memor studio: the two clock sliders redraw the timeline in place (the
// URL keeps both instants), bars show their details when focused, and the
// forms of the actions that change the store post JSON (the server takes
// no other body). Plain script, no dependency.
"use strict";

function iso(seconds) { return new Date(seconds * 1000).toISOString().replace(".000Z", "Z"); }
function day(seconds) { return iso(seconds).slice(0, 10); }

// The timeline: each slider writes its instant to its text field and the
// URL, then the view at the two instants replaces the old one.
function clocks(form) {
  let inflight = null;
  const redraw = () => {
    const params = new URLSearchParams(new FormData(form));
    const url = form.getAttribute("action") + "?" + params.toString();
    if (inflight) inflight.abort();
    inflight = new AbortController();
    fetch(url, { signal: inflight.signal, credentials: "same-origin" })
      .then(r => r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status)))
      .then(html => {
        const doc = new DOMParser().parseFromString(html, "text/html");
        const fresh = doc.getElementById("view");
        const view = document.getElementById("view");
        if (fresh && view) { view.replaceWith(fresh); bars(); }
        history.replaceState(null, "", url);
      })
      .catch(err => { if (err.name !== "AbortError") document.getElementById("detail").textContent = "Could not redraw: " + err.message; });
  };
  for (const range of form.querySelectorAll("input[type=range]")) {
    const field = document.getElementById(range.dataset.for);
    const out = document.getElementById(range.dataset.for + "-out");
    range.addEventListener("input", () => { field.value = iso(+range.value); out.textContent = day(+range.value); });
    range.addEventListener("change", redraw);
  }
  form.addEventListener("submit", ev => { ev.preventDefault(); redraw(); });
}

// A focused or hovered bar says everything about its version in the
// detail panel (its <title> is the same text, for a pointer).
function bars() {
  const detail = document.getElementById("detail");
  if (!detail) return;
  for (const bar of document.querySelectorAll("#timeline .bar")) {
    const show = () => {
      const t = bar.querySelector("title");
      detail.textContent = t ? t.textContent : "";
      const ep = document.createElement("a");
      ep.href = "episodes#ep-" + bar.dataset.episode;
      ep.textContent = "\nsource: episode " + bar.dataset.episode;
      detail.appendChild(ep);
    };
    bar.addEventListener("focus", show);
    bar.addEventListener("mouseenter", show);
  }
}

// Forms of class "post" send their fields as JSON and follow the answer.
function posts() {
  for (const form of document.querySelectorAll("form.post")) {
    form.addEventListener("submit", ev => {
      ev.preventDefault();
      const status = form.querySelector(".status") || form.parentElement.querySelector(".status");
      const body = Object.fromEntries(new FormData(form));
      fetch(form.getAttribute("action"), {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      }).then(r => r.json().then(j => ({ ok: r.ok, j })))
        .then(({ ok, j }) => {
          if (status) status.textContent = ok ? (j.message || "done") : (j.error || "failed");
          if (ok && j.redirect) location.assign(j.redirect);
        })
        .catch(err => { if (status) status.textContent = "failed: " + err.message; });
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("clocks");
  if (form) clocks(form);
  bars();
  posts();
});
