/* The table console's shared script: helpers, the live updates, the slip's Print button.
   dealer.js and player.js add their page (window.Showdown.pages[name] = {init, render}).
   No build step, no external assets. Everything shown is built with
   createElement/textContent (never HTML from data). The session lives in an HttpOnly cookie:
   this script never sees it. Amounts are shown in rand; a wager keyed in rand is sent in cents. */
"use strict";

(function () {
  const page = document.body.dataset.page || "";
  const $ = (id) => document.getElementById(id);
  const state = { view: null, me: null, received: 0 };
  const pages = {};
  const SUITS = { s: "♠", h: "♥", d: "♦", c: "♣" };
  const RED = { h: true, d: true };
  const SPOTS = [["ante", "Ante"], ["odds", "Odds"], ["play", "Play"],
                 ["trips_plus", "Trips Plus"], ["pocket_bonus", "Pocket Bonus"],
                 ["sweet16", "Sweet 16"]];

  // ---- small helpers ----------------------------------------------------------------------

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function clear(node) { while (node && node.firstChild) node.removeChild(node.firstChild); }

  function rand(cents) {
    const n = Number(cents) || 0;
    const sign = n < 0 ? "-" : "";
    const abs = Math.abs(Math.trunc(n));
    const units = Math.floor(abs / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return sign + "R" + units + "." + String(abs % 100).padStart(2, "0");
  }

  // An entry as people see it (D331): its short code (the page's) and the player's name when
  // the desk sent them; the entry id only when it sent neither.
  function entryLabel(x) {
    const code = (x && x.entry_code) || (x && x.entry_id) || "";
    return x && x.name ? code + " · " + x.name : code;
  }
  function shown(amount) { return amount && amount.rand ? amount.rand : rand(amount && amount.cents); }

  /* "R1,234.50", "1234.5", "25" -> cents (an integer), or null: no floating point. */
  function parseRand(text) {
    const t = String(text || "").replace(/[R\s,]/gi, "");
    const m = /^(\d{1,9})(?:\.(\d{1,2}))?$/.exec(t);
    if (!m) return null;
    return Number(m[1]) * 100 + Number((m[2] || "0").padEnd(2, "0"));
  }

  function cardNode(text, cls) {
    const node = el("span", "card" + (cls ? " " + cls : ""));
    if (!text) { node.classList.add("empty"); node.textContent = "·"; return node; }
    const suit = text.slice(-1).toLowerCase();
    node.textContent = text.slice(0, -1).replace("T", "10") + (SUITS[suit] || suit);
    if (RED[suit]) node.classList.add("red");
    node.dataset.card = text;
    return node;
  }

  function ago(seconds) {
    if (seconds === null || seconds === undefined) return "no hand yet";
    const s = Math.max(0, Math.floor(seconds));
    if (s < 60) return s + " s ago";
    const m = Math.floor(s / 60);
    return m < 60 ? m + " min " + (s % 60) + " s ago" : Math.floor(m / 60) + " h " + (m % 60) + " min ago";
  }

  /* The banner tells the table's answer (D339): "good" (green) only for an answer with
     ok: true, "bad" (red) with the table's own reason for a refusal, "info" (blue) for a wait
     the person cancelled. It lies under the header and never covers the phase. */
  let bannerTimer = null;
  function banner(text, kind) {
    const node = $("banner");
    if (!node) return;
    const k = kind || "bad";
    node.textContent = text;
    node.className = "banner " + k;  // shown, two lines at most until tapped
    node.dataset.kind = k;
    if (bannerTimer) clearTimeout(bannerTimer);
    if (k !== "bad") bannerTimer = setTimeout(() => { node.classList.add("hidden"); above(); }, 6000);
    above();
  }

  /* The overlays start below the header and the banner: --above is where they end. */
  function above() {
    let bottom = 0;
    [document.querySelector("header.top"), $("banner")].forEach((n) => {
      if (n && !n.classList.contains("hidden")) bottom = Math.max(bottom, n.getBoundingClientRect().bottom);
    });
    document.documentElement.style.setProperty("--above", Math.ceil(bottom) + "px");
  }

  /* Show the table's answer: ``done`` (text, or a function of the answer) when it said ok. */
  function show(answer, done, fallback) {
    if (answer && answer.ok === true) {
      const text = typeof done === "function" ? done(answer) : done;
      banner(text || fallback || "done", "good");
    } else {
      banner((answer && answer.error) || "refused (the table gave no reason)", "bad");
    }
    return answer;
  }

  async function post(path, body) {
    let answer;
    try {
      const response = await fetch(path, {
        method: "POST", credentials: "same-origin", cache: "no-store",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
      });
      const text = await response.text();
      try { answer = JSON.parse(text); } catch (err) { answer = null; }
      if (!answer || typeof answer !== "object") {
        answer = { ok: false, error: "the table answered " + response.status + " without a reason" };
      }
      if (!response.ok) answer.ok = false;
      answer.status = response.status;
    } catch (err) {
      answer = { ok: false, error: "the table did not answer: " + err };
    }
    return answer;
  }

  async function act(action, fields, done) {
    const answer = await post("/api/action", Object.assign({ action: action }, fields || {}));
    show(answer, done, action.replace(/_/g, " ") + ": done");
    if (answer.status === 401) connect();
    return answer;
  }

  function openOverlay(id) { const o = $(id); if (o) o.classList.remove("hidden"); }
  function closeOverlay(id) { const o = $(id); if (o) o.classList.add("hidden"); }

  /* Cancel closes the dialog; a wait for a card tap is stopped at the table and the banner
     says so (the waiting request's own answer then shows only if the tap came first). */
  document.querySelectorAll("[data-close]").forEach((b) => b.addEventListener("click", async () => {
    const overlay = b.closest(".overlay");
    if (overlay) overlay.classList.add("hidden");
    if (overlay && overlay.dataset.waiting) {
      overlay.dataset.cancelled = "1";
      const answer = await post("/api/action", { action: "cancel_tap" });
      if (answer.ok === true) banner("cancelled: the table stopped waiting for the card; nothing was recorded", "info");
      else show(answer);
    }
  }));

  /* An on-screen keypad writing into its input. */
  function keypads() {
    document.querySelectorAll(".keypad").forEach((pad) => {
      const input = $(pad.dataset.keypadFor);
      ["1", "2", "3", "4", "5", "6", "7", "8", "9", "clear", "0", "back"].forEach((k) => {
        const label = k === "back" ? "⌫" : k === "clear" ? "Clear" : k;
        const b = el("button", "key", label);
        b.type = "button";
        b.dataset.key = k;
        b.addEventListener("click", () => {
          if (!input) return;
          if (k === "back") input.value = input.value.slice(0, -1);
          else if (k === "clear") input.value = "";
          else if (input.value.length < (input.maxLength > 0 ? input.maxLength : 12)) input.value += k;
        });
        pad.appendChild(b);
      });
    });
  }

  // ---- live updates ---------------------------------------------------------------------

  function take(doc) {
    state.view = doc.view;
    state.me = doc.me;
    state.received = Date.now();
    document.body.dataset.version = String(doc.view.version);
    render();
  }

  async function refresh() {
    try {
      const response = await fetch("/api/view", { credentials: "same-origin", cache: "no-store" });
      if (response.ok) take(await response.json());
    } catch (err) { /* the event stream reconnects by itself */ }
  }

  let source = null;
  /* The stream (re)opened: after a sign-in or sign-out it must carry the new cookie. */
  function connect() {
    const live = $("live");
    if (source) source.close();
    source = new EventSource("/events");
    source.addEventListener("open", () => { if (live) live.classList.add("on"); });
    source.addEventListener("error", () => { if (live) live.classList.remove("on"); });
    source.addEventListener("view", (e) => take(JSON.parse(e.data)));
  }

  function render() {
    const v = state.view;
    if (!v) return;
    $("table-id").textContent = "Table " + v.table;
    $("heat").textContent = v.heat ? v.heat.stage + " · " + v.heat.heat_id : "no heat open";
    const phase = $("phase");
    if (v.state === "error") {
      phase.textContent = "TABLE IN ERROR STATE: " + v.faults.join("; ");
      phase.className = "phase bad";
    } else if (v.hand) {
      phase.textContent = (v.hand.paused ? "PAUSED · " : "") + v.hand.phase_label;
      phase.className = "phase" + (v.hand.paused ? " bad" : "");
      phase.dataset.phase = v.hand.phase;
    } else if (v.payout && !v.payout.complete) {
      phase.textContent = "Pay and take, then Payout done";
      phase.className = "phase warn";
      phase.dataset.phase = "payout";
    } else {
      phase.textContent = v.heat ? "Between hands: place your bets" : "No heat open";
      phase.className = "phase";
      phase.dataset.phase = "idle";
    }
    // The step sets the layout (D338): the payout open, a hand in play, a settled hand to pay
    // from the settlement (no payout check at this table), or between hands.
    document.body.dataset.step = v.payout && !v.payout.complete ? "payout" : v.hand ? "hand"
      : v.settlement && v.verify_payouts === false ? "settled" : "idle";
    document.body.dataset.signedIn = state.me ? "yes" : "no";
    const mine = pages[page];
    if (mine) mine.render(v);
    (extras[page] || []).forEach((x) => x.render(v));
    above();
  }

  /* A part of a page kept in a script of its own (rulings.js, lockouts.js, ...): its init runs
     after the page's, its render after the page's on every view. */
  const extras = {};
  function extend(name, part) { (extras[name] = extras[name] || []).push(part); }

  // ---- start ---------------------------------------------------------------------------

  const bannerNode = $("banner");
  /* A banner longer than two lines opens on the first tap; a tap on a whole banner hides it. */
  if (bannerNode) bannerNode.addEventListener("click", () => {
    if (!bannerNode.classList.contains("open") && bannerNode.scrollHeight > bannerNode.clientHeight + 1) {
      bannerNode.classList.add("open");
    } else bannerNode.classList.add("hidden");
    above();
  });
  document.querySelectorAll("[data-print]").forEach((b) => b.addEventListener("click", () => window.print()));
  window.addEventListener("resize", above);
  window.Showdown = { $, el, clear, rand, shown, entryLabel, parseRand, cardNode, ago, banner, show, post, act,
    openOverlay, closeOverlay, keypads, connect, render, state, pages, extend, SUITS, RED, SPOTS };
  document.addEventListener("DOMContentLoaded", () => {
    const mine = pages[page];
    if (!mine) return;
    mine.init();
    (extras[page] || []).forEach((x) => x.init());
    refresh();
    connect();
  });
})();
