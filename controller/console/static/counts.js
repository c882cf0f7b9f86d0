/* The dealer's screen (after dealer.js): the tray counted at the heat's opening and closing.
   Registered with Showdown.extend("dealer", {init, render}).

   The screen document carries `tallies.counts` ({opening, closing}: each null or the count
   with its total, who counted, whether a supervisor confirmed it, and a line to read) and
   `tallies.chip_values` (the chip set's values in cents). "Count the tray" asks how many
   chips of each value were counted (the dealer counts blind: what the table expects shows
   once the count is recorded) and sends `count_chips`; "Supervisor confirms" asks for the
   supervisor's own staff id and PIN and sends `confirm_count`. The banner shows the table's
   answer as it is: a refusal is never shown as done. */
"use strict";

(function () {
  const S = window.Showdown;
  const { $, el, clear } = S;

  function tallies() {
    const v = S.state.view;
    return (v && v.tallies) || { counts: {}, chip_values: [] };
  }

  function stageNow(v) {
    const counts = tallies().counts || {};
    if (!counts.opening || !counts.opening.confirmed) return "opening";
    return "closing";
  }

  async function count() {
    const v = S.state.view || {};
    const values = tallies().chip_values || [];
    if (!v.heat) { S.banner("no heat is open: the tray is counted at a heat's opening and before its close", "bad"); return; }
    const fields = [{ name: "stage", label: "Count", type: "select", value: stageNow(v),
                      options: [["opening", "Opening count"], ["closing", "Closing count"]] }];
    values.forEach((c) => fields.push({ name: "v" + c, label: S.rand(c) + " chips", value: "0" }));
    if (!values.length) fields.push({ name: "other", label: "Chips as VALUE=N, comma-separated (e.g. 500=40)" });
    const got = await S.ask("Count the tray", "How many chips of each value are in the tray?", fields);
    if (!got) return;
    const counted = {};
    let bad = null;
    values.forEach((c) => {
      const text = (got["v" + c] || "").trim();
      if (!/^\d+$/.test(text)) bad = bad || (S.rand(c) + ": " + (text || "nothing") + " is not a number of chips");
      else counted[String(c)] = Number(text);
    });
    (got.other || "").split(",").map((x) => x.trim()).filter(Boolean).forEach((pair) => {
      const [value, n] = pair.split("=");
      if (!/^\d+$/.test(value || "") || !/^\d+$/.test(n || "")) bad = bad || ("'" + pair + "' is not VALUE=N");
      else counted[value] = Number(n);
    });
    if (bad) { S.banner(bad, "bad"); return; }
    await S.act("count_chips", { stage: got.stage, counted: counted },
      (a) => (a.detail && a.detail.say) || got.stage + " count recorded");
  }

  async function confirm() {
    const v = S.state.view || {};
    const pending = ["opening", "closing"].filter((s) => {
      const c = (tallies().counts || {})[s];
      return c && !c.confirmed;
    });
    if (!pending.length) { S.banner("no count is waiting for a supervisor's confirmation", "bad"); return; }
    const asking = S.ask("Supervisor confirms the count",
      "A second person: the supervisor confirms with their own staff id and PIN.", [
        { name: "stage", label: "Count", type: "select", value: pending[0],
          options: pending.map((s) => [s, s + ": " + ((tallies().counts || {})[s].say || "")]) },
        { name: "staff_id", label: "Supervisor's staff id" },
        { name: "pin", label: "Supervisor's PIN" }]);
    const pin = $("ask-pin");
    if (pin) { pin.type = "password"; pin.inputMode = "numeric"; }
    const got = await asking;
    if (pin) pin.type = "text";
    if (!got) return;
    if (!got.staff_id || !got.pin) { S.banner("the supervisor gives their own staff id and PIN", "bad"); return; }
    await S.act("confirm_count", { stage: got.stage, staff_id: got.staff_id.trim(), pin: got.pin },
      (a) => (a.detail && a.detail.alert ? "ALERT: " : "") + ((a.detail && a.detail.say) || "count confirmed"));
    if (v) S.render();
  }

  function init() {
    const panel = el("div", "counts");
    panel.id = "counts";
    panel.appendChild(el("h2", null, "Tray counts"));
    panel.appendChild(el("div", "tally-lines"));
    const pad = el("div", "count-buttons");
    const a = el("button", "button", "Count the tray");
    a.type = "button"; a.id = "count-tray"; a.addEventListener("click", count);
    const b = el("button", "button", "Supervisor confirms");
    b.type = "button"; b.id = "confirm-count"; b.addEventListener("click", confirm);
    pad.appendChild(a); pad.appendChild(b);
    panel.appendChild(pad);
    const staff = $("staff");
    const home = (staff && staff.parentNode) || $("actions");
    if (home) home.appendChild(panel);
  }

  function render(v) {
    const panel = $("counts");
    if (!panel) return;
    const me = S.state.me;
    panel.classList.toggle("hidden", !(me && v && v.heat));
    const list = panel.querySelector(".tally-lines");
    clear(list);
    const counts = tallies().counts || {};
    ["opening", "closing"].forEach((stage) => {
      const c = counts[stage];
      const text = !c ? stage + ": not counted yet" :
        stage + ": " + c.say + (c.confirmed ? " (confirmed by " + c.supervisor_id + ")" : " (waiting for a supervisor)");
      const item = el("p", "tally-line" + (c && c.confirmed ? " muted" : ""), text);
      item.dataset.stage = stage;
      item.dataset.confirmed = c && c.confirmed ? "yes" : "no";
      list.appendChild(item);
    });
  }

  S.extend("dealer", { init: init, render: render });
})();
