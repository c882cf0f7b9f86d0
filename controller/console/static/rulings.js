/* The dealer's screen (after dealer.js): a supervisor's rulings: several alerts resolved in one act, a settled hand voided or corrected at the table.
   Registered with Showdown.extend("dealer", {init, render}).

   "Resolve several" (in the alerts panel): a dialog with a checkbox per open resolvable alert
   (an item that stands for several identical alerts carries them all in alert_ids), all ticked,
   and one reason: one act, `resolve_alerts`, each alert's resolution recorded by the table.
   "Rule on a settled hand" (above the game recall): a hand of the game recall, the seat, void or
   correct (the net in rand), the reason: `rule_hand`, the same correcting record the desk makes.
   Every banner follows the table's answer (Showdown.act). */
"use strict";

(function () {
  const S = window.Showdown;
  const { $, el, clear, rand, shown, entryLabel, parseRand, banner, act, state } = S;
  const QUICK = ["cards set aside, not in play", "read again on the table", "checked: table is right"];
  const RULE_QUICK = ["misdeal", "paid short", "paid over", "card misread"];
  let several = null;  // the "Resolve several" button
  let ruleButton = null;  // the "Rule on a settled hand" button

  /* The alert ids of one alert item (a collapsed item carries every id in alert_ids). */
  function idsOf(a) {
    if (Array.isArray(a.alert_ids) && a.alert_ids.length) return a.alert_ids.slice();
    return a.alert_id === null || a.alert_id === undefined ? [] : [a.alert_id];
  }

  function resolvable(v) {
    return ((v && v.alerts) || []).filter((a) => a.resolvable && idsOf(a).length);
  }

  /* Signed rand -> cents: "-R25", "R100.50", "-25" (a loss is negative); null if not money. */
  function signedCents(text) {
    const t = String(text || "").trim();
    const negative = /^[-−]/.test(t);
    const cents = parseRand(negative ? t.slice(1) : t);
    if (cents === null) return null;
    return negative ? -cents : cents;
  }

  // ---- resolve several ---------------------------------------------------------------------

  function dialog() {
    let overlay = $("resolve-several");
    if (overlay) return overlay;
    overlay = el("div", "overlay hidden");
    overlay.id = "resolve-several";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-labelledby", "resolve-several-title");
    const form = el("form", "dialog");
    form.id = "resolve-several-form";
    const title = el("h2", null, "Resolve several alerts");
    title.id = "resolve-several-title";
    form.appendChild(title);
    form.appendChild(el("p", "muted", "One act, one reason: each alert ticked is resolved and recorded on its own; if one cannot be, none is."));
    const checks = el("fieldset", "checks");
    checks.id = "resolve-several-checks";
    const scroll = el("div", "checks-scroll");  // the list scrolls; the reason and OK stay
    scroll.appendChild(checks);
    form.appendChild(scroll);
    const label = el("label", "field", "How they were dealt with ");
    const reason = el("input");
    reason.id = "resolve-several-reason";
    reason.name = "reason";
    reason.autocomplete = "off";
    reason.maxLength = 1000;
    label.appendChild(reason);
    form.appendChild(label);
    const quick = el("div", "quick");
    QUICK.forEach((q) => {
      const b = el("button", "button small quiet", q);
      b.type = "button";
      b.addEventListener("click", () => { reason.value = q; });
      quick.appendChild(b);
    });
    form.appendChild(quick);
    const row = el("div", "row");
    const ok = el("button", "button go", "Resolve ticked");
    ok.type = "submit";
    ok.id = "resolve-several-ok";
    const cancel = el("button", "button quiet", "Cancel");
    cancel.type = "button";
    cancel.id = "resolve-several-cancel";
    cancel.addEventListener("click", () => overlay.classList.add("hidden"));
    row.appendChild(ok);
    row.appendChild(cancel);
    form.appendChild(row);
    form.addEventListener("submit", submitSeveral);
    overlay.appendChild(form);
    document.body.appendChild(overlay);
    return overlay;
  }

  function openSeveral() {
    const items = resolvable(state.view);
    if (!items.length) { banner("no alert is open to resolve", "bad"); return; }
    const overlay = dialog();
    const checks = $("resolve-several-checks"); clear(checks);
    checks.appendChild(el("legend", null, "Alerts to resolve"));
    items.forEach((a) => {
      const ids = idsOf(a);
      const line = el("label", "check");
      const box = el("input");
      box.type = "checkbox";
      box.checked = true;
      box.dataset.ids = ids.join(",");
      line.appendChild(box);
      const count = ids.length > 1 ? " ×" + ids.length : "";
      line.appendChild(el("span", null, a.kind.replace(/_/g, " ") + count + (a.seat ? " · seat " + a.seat : "") +
        " · " + a.message));
      checks.appendChild(line);
    });
    $("resolve-several-reason").value = "";
    overlay.classList.remove("hidden");
    const first = checks.querySelector("input");
    if (first) first.focus();
  }

  async function submitSeveral(e) {
    e.preventDefault();
    const ids = [];
    document.querySelectorAll("#resolve-several-checks input[type=checkbox]").forEach((b) => {
      if (b.checked) b.dataset.ids.split(",").forEach((i) => ids.push(Number(i)));
    });
    const reason = $("resolve-several-reason").value.trim();
    if (!ids.length) { banner("tick at least one alert", "bad"); return; }
    if (!reason) { banner("resolving needs a reason", "bad"); return; }
    $("resolve-several").classList.add("hidden");
    await act("resolve_alerts", { alert_ids: ids, reason: reason },
      ids.length + (ids.length === 1 ? " alert" : " alerts") + " resolved");
  }

  // ---- rule on a settled hand --------------------------------------------------------------

  function settled(v) { return ((v && v.recall) || []).filter((r) => r.status === "settled"); }

  async function ruleOnHand() {
    const hands = settled(state.view);
    if (!hands.length) { banner("no settled hand to rule on", "bad"); return; }
    let r = hands[0];
    if (hands.length > 1) {
      const got = await S.ask("Rule on a settled hand", "Which hand? (the game recall's hands of this heat)", [
        { name: "hand_id", label: "Hand", type: "select",
          options: hands.map((h) => [h.hand_id, h.hand_id + " · " + (h.at || "").replace("T", " ").slice(11, 19) + " · " +
            h.seats.map((s) => "seat " + s.seat + " " + shown(s.net)).join(", ")]) }]);
      if (!got) return;
      r = hands.find((h) => h.hand_id === got.hand_id) || r;
    }
    const got = await S.ask("Rule on hand " + r.hand_id,
      "A supervisor's ruling on one seat's result: the hand's record stays as it settled; a correcting record moves the chips.", [
        { name: "seat", label: "Seat", type: "select",
          options: r.seats.map((s) => [String(s.seat), "Seat " + s.seat + " (" + entryLabel(s) + ") " + shown(s.net)]) },
        { name: "ruling", label: "Ruling", type: "select",
          options: [["void", "Void the hand for this seat"], ["correct", "Correct the seat's net"]] },
        { name: "net", label: "Corrected net, rand (correct only; a loss is -R25)", placeholder: "-R25.00" },
        { name: "reason", label: "Reason", quick: RULE_QUICK }]);
    if (!got) return;
    if (!got.reason) { banner("a ruling needs a reason", "bad"); return; }
    const fields = { hand_id: r.hand_id, seat: Number(got.seat), ruling: got.ruling, reason: got.reason };
    if (got.ruling === "correct") {
      const cents = signedCents(got.net);
      if (cents === null) { banner("give the corrected net in rand, e.g. R100.00 or -R25.00", "bad"); return; }
      fields.net = cents;
    }
    const done = "hand " + r.hand_id + (got.ruling === "void" ? " voided" : " corrected to " + rand(fields.net)) +
      " for seat " + got.seat;
    await act("rule_hand", fields, done);
  }

  // ---- the part ----------------------------------------------------------------------------

  function init() {
    const alerts = $("alerts");
    if (alerts && alerts.parentNode) {
      several = el("button", "button small super rulings-several hidden", "Resolve several");
      several.type = "button";
      several.id = "resolve-several-open";
      several.addEventListener("click", openSeveral);
      alerts.parentNode.insertBefore(several, alerts);  // above the list: in reach with 13 open
    }
    const recall = $("recall");  // beside the hands it rules on, not in the step's own pad
    if (recall && recall.parentNode) {
      ruleButton = el("button", "button super", "Rule on a settled hand");
      ruleButton.type = "button";
      ruleButton.id = "rule-hand-open";
      ruleButton.addEventListener("click", ruleOnHand);
      recall.parentNode.insertBefore(ruleButton, recall);
    }
  }

  function render(v) {
    if (several) {
      const count = resolvable(v).reduce((n, a) => n + idsOf(a).length, 0);
      several.classList.toggle("hidden", count < 2);
      several.textContent = "Resolve several (" + count + ")";
    }
    if (ruleButton) ruleButton.classList.toggle("idle", !settled(v).length);
  }

  S.extend("dealer", { init: init, render: render });
})();
