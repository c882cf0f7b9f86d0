/* The dealer's screen (after dealer.js): the table's deck inventory.
   Registered with Showdown.extend("dealer", {init, render}).

   The screen document carries `tallies.decks` (position: sealed, in play, awaiting
   destruction; today: the last day's figures and whether they balance). "Decks" asks what
   happened (received by a supervisor, opened or used by the dealer, destroyed by a supervisor
   before a witness who gives their own staff id and PIN) and sends decks_<kind>. The banner
   shows the table's answer as it is. */
"use strict";

(function () {
  const S = window.Showdown;
  const { $, el, clear } = S;

  function decks() {
    const v = S.state.view;
    return (v && v.tallies && v.tallies.decks) || null;
  }

  async function step() {
    const asking = S.ask("Decks", "Record decks received, opened, used or destroyed, under your own sign-in.", [
      { name: "kind", label: "What", type: "select", value: "opened", options: [
        ["received", "Received (supervisor)"], ["opened", "Opened into play"], ["used", "Used (retired)"],
        ["destroyed", "Destroyed (supervisor, before a witness)"]] },
      { name: "decks", label: "How many decks", value: "1" },
      { name: "seals", label: "Seal numbers, comma-separated (optional)" },
      { name: "lot", label: "Lot number (received)" },
      { name: "source", label: "From (received: cage, pit stock)" },
      { name: "staff_id", label: "Witness's staff id (destroyed)" },
      { name: "pin", label: "Witness's PIN (destroyed)" }]);
    const pin = $("ask-pin");
    if (pin) pin.type = "password";
    const got = await asking;
    if (pin) pin.type = "text";
    if (!got) return;
    if (!/^\d+$/.test((got.decks || "").trim())) { S.banner("how many decks: give a whole number", "bad"); return; }
    const fields = { decks: Number(got.decks.trim()) };
    const seals = (got.seals || "").split(",").map((x) => x.trim()).filter(Boolean);
    if (seals.length) fields.seals = seals;
    if (got.kind === "received") {
      if (got.lot) fields.lot = got.lot.trim();
      if (got.source) fields.source = got.source.trim();
    }
    if (got.kind === "destroyed") {
      if (!got.staff_id || !got.pin) { S.banner("a witness gives their own staff id and PIN", "bad"); return; }
      fields.staff_id = got.staff_id.trim();
      fields.pin = got.pin;
    }
    await S.act("decks_" + got.kind, fields, (a) => {
      const d = a.detail || {};
      return (d.balanced === false ? "ALERT: " + (d.problems || []).join("; ") + " · " : "") +
        "decks " + got.kind + ": " + d.sealed + " sealed, " + d.in_play + " in play, " + d.awaiting + " awaiting destruction";
    });
  }

  function init() {
    const panel = el("div", "decks");
    panel.id = "decks";
    panel.appendChild(el("h2", null, "Decks"));
    panel.appendChild(el("p", "deck-line muted"));
    const button = el("button", "button", "Decks");
    button.type = "button"; button.id = "deck-step"; button.addEventListener("click", step);
    panel.appendChild(button);
    const staff = $("staff");
    const home = (staff && staff.parentNode) || $("actions");
    if (home) home.appendChild(panel);
  }

  function render() {
    const panel = $("decks");
    if (!panel) return;
    panel.classList.toggle("hidden", !S.state.me);
    const d = decks();
    const line = panel.querySelector(".deck-line");
    clear(line);
    if (!d) return;
    const p = d.position, t = d.today;
    line.textContent = p.sealed + " sealed · " + p.in_play + " in play · " + p.awaiting + " awaiting destruction" +
      (t && t.day ? " · " + t.day + ": " + (t.balanced ? "balanced" : "NOT BALANCED: " + t.problems.join("; ")) : "");
    line.classList.toggle("bad", !!(t && t.day && !t.balanced));
  }

  S.extend("dealer", { init: init, render: render });
})();
