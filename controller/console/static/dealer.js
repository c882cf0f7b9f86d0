/* The dealer's touch screen (after console.js): the hand, alerts, actions, payout,
   settlement, recall; the sign-in panel and the action dialogs. */
"use strict";

(function () {
  const S = window.Showdown;
  const { $, el, clear, rand, shown, entryLabel, parseRand, cardNode, ago, banner, show, post, act,
    openOverlay, closeOverlay, keypads, connect, render, state, SUITS, RED, SPOTS } = S;

  // ---- the dealer's screen ----------------------------------------------------------------

  // Actions the table refuses with no hand in play: put aside while the payout is open.
  const NEEDS_HAND = ["reveal", "settle", "void", "correct_card", "manual_card"];
  // The buttons of dealer.html this page lights, dims or puts aside.
  const OWN = ["no_more_bets", "reveal", "settle", "payout_check", "issue_chips", "return_chips",
    "payout_override", "void", "correct_card", "manual_card", "manual_wager"];

  function renderDealer(v) {
    const me = state.me;
    $("me").textContent = me ? me.name + " (" + me.role + ")" : "not signed in";
    $("me").dataset.role = me ? me.role : "";
    $("sign-in-open").classList.toggle("hidden", !!me);
    $("sign-out").classList.toggle("hidden", !me);
    const hand = v.hand;
    // The cards on the table: the hand in play's, else the last hand's until the next opens.
    const cards = v.cards || null;
    const dealer = $("dealer-cards"); clear(dealer);
    const dealerCards = cards ? cards.dealer : [];
    for (let i = 0; i < 2; i++) dealer.appendChild(cardNode(dealerCards[i]));
    const board = $("board"); clear(board);
    (cards ? cards.board : [null, null, null, null, null]).forEach((c) => board.appendChild(cardNode(c)));
    const burns = $("burns"); clear(burns);
    (cards ? cards.burns : []).forEach((c) => burns.appendChild(cardNode(c, "small")));
    $("hand-line").textContent = hand
      ? "Hand " + hand.hand_id + " · " + hand.cards.length + " cards read" +
        (hand.next_target ? " · next: " + hand.next_target : "") + (hand.manual ? " · MANUAL" : "")
      : (v.last_hand ? "Last hand " + v.last_hand.hand_id + " (" + v.last_hand.status + ")" +
        (cards ? ": its cards stay until the next hand opens" : "") : "");
    renderSeats(v);
    renderAlerts(v);
    renderPayout(v);
    renderSettlement(v);
    renderRecall(v);
    const staff = $("staff"); clear(staff);
    if (!v.staff || !v.staff.length) staff.textContent = v.roster ? "Nobody." : "No staff roster has reached this table.";
    (v.staff || []).forEach((s) => staff.appendChild(el("div", "staff-line", s.name + " · " + s.staff_id + " · " + s.role)));
    const waiting = $("waiting-scores"); clear(waiting);
    if (!v.scores || !v.scores.length) waiting.textContent = "None.";
    (v.scores || []).forEach((s) => waiting.appendChild(el("div", "score-line" + (s.disputed ? " bad" : ""),
      entryLabel(s) + " · " + shown(s.score) + " · " + s.hands + " hands" + (s.disputed ? " · DISPUTED: " + s.note : ""))));
    const can = hand ? hand.can : {};
    document.querySelectorAll("#actions [data-action]").forEach((b) => {
      const a = b.dataset.action;
      if (OWN.indexOf(a) < 0) return;  // another part's button (rulings.js, ...): its own
      const ready = (a === "no_more_bets" && ((!hand && !v.payout) || can.no_more_bets)) ||
        (a === "settle" && can.settle) || (a === "reveal" && can.reveal) ||
        ((a === "payout_check" || a === "payout_override") && v.payout);
      b.classList.toggle("ready", !!ready);
      b.classList.toggle("step-off", !!v.payout && !hand && NEEDS_HAND.indexOf(a) >= 0);
      if (!b.classList.contains("super")) b.classList.toggle("idle", !ready);
    });
  }

  function renderSeats(v) {
    const box = $("seats"); clear(box);
    if (!v.seats || !v.seats.length) { box.appendChild(el("p", "muted", "No entry is seated.")); return; }
    const elapsed = (Date.now() - state.received) / 1000;
    v.seats.forEach((s) => {
      const card = el("article", "seat" + (s.in_hand ? " in-hand" : ""));
      card.dataset.seat = String(s.seat);
      const head = el("div", "seat-head");
      head.appendChild(el("span", "seat-no", "Seat " + s.seat));
      head.appendChild(el("span", "entry", entryLabel(s)));
      card.appendChild(head);
      card.appendChild(el("div", "chips", shown(s.chips)));
      const facts = el("div", "facts");
      facts.appendChild(el("span", "hands", "hand " + s.hands_played + " of " + s.hands_total));
      if (s.markers_total) facts.appendChild(el("span", "markers", s.markers_left + " markers left"));
      const since = s.seconds_since_last_hand === null ? null : s.seconds_since_last_hand + elapsed;
      const sinceNode = el("span", "since", ago(since));
      sinceNode.dataset.since = s.seconds_since_last_hand === null ? "" : String(s.seconds_since_last_hand);
      facts.appendChild(sinceNode);
      card.appendChild(facts);
      const spots = el("div", "spots");
      if (!s.spots.length) spots.appendChild(el("span", "muted", "no wagers"));
      s.spots.forEach((w) => {
        const spot = el("span", "spot" + (w.keyed ? " keyed" : ""), w.label + " " + w.rand);
        spot.dataset.spot = w.spot;
        spots.appendChild(spot);
      });
      (s.markers || []).forEach((m) => spots.appendChild(el("span", "spot marker", "marker on " + m)));
      card.appendChild(spots);
      const hole = el("div", "cards hole");
      const holes = (v.cards && v.cards.holes && v.cards.holes[String(s.seat)]) || s.hole || [];
      holes.forEach((c) => hole.appendChild(cardNode(c)));
      card.appendChild(hole);
      const decisions = el("div", "decisions");
      s.decisions.forEach((d) => decisions.appendChild(el("span", "decision " + d.decision, d.text)));
      card.appendChild(decisions);
      box.appendChild(card);
    });
  }

  function renderAlerts(v) {
    const box = $("alerts"); clear(box);
    const alerts = v.alerts || [];
    $("alert-count").textContent = alerts.length ? String(alerts.length) : "";
    if (!alerts.length) { box.appendChild(el("p", "muted", "No alerts.")); return; }
    let lastHelp = null;
    alerts.forEach((a) => {
      const item = el("div", "alert" + (a.resolvable ? " hand-alert" : " notice"));
      if (a.alert_id !== null && a.alert_id !== undefined) item.dataset.alertId = String(a.alert_id);
      if (a.alert_ids && a.alert_ids.length) item.dataset.alertIds = a.alert_ids.join(",");
      item.dataset.kind = a.kind;
      item.dataset.count = String(a.count || 1);
      // The kind in words, and the seat unless the message names it first.
      const named = a.seat && String(a.message || "").startsWith("seat " + a.seat);
      const label = a.kind.replace(/_/g, " ");
      const kind = el("div", "alert-kind", label.charAt(0).toUpperCase() + label.slice(1) +
        (a.seat && !named ? " · seat " + a.seat : "") + ":");
      if ((a.count || 1) > 1) kind.appendChild(el("span", "alert-times", "×" + a.count));
      item.appendChild(kind);
      item.appendChild(el("div", "alert-message", a.message));
      // What to do, once for a run of alerts that say the same (four losers not taken).
      if (a.what_to_do !== lastHelp) item.appendChild(el("div", "what-to-do", "What to do: " + a.what_to_do));
      lastHelp = a.what_to_do;
      if (a.clearable) {
        const b = el("button", "button small super", "Clear fault");
        b.type = "button";
        b.dataset.clear = a.role;
        b.addEventListener("click", () => clearFault(a));
        item.appendChild(b);
      }
      if (a.resolvable) {
        const b = el("button", "button small super", "Resolve");
        b.type = "button";
        b.dataset.resolve = String(a.alert_id);
        b.addEventListener("click", () => resolve(a));
        item.appendChild(b);
      }
      box.appendChild(item);
    });
  }

  /* The payout: each spot's pay or take (from the settlement), what it must hold, what it
     holds and its state, first on the screen while the payout is open. */
  function renderPayout(v) {
    const box = $("payout"); clear(box);
    const p = v.payout;
    $("payout-state").textContent = p ? "hand " + p.hand_id : "";
    box.closest(".panel").classList.toggle("empty", !p);
    if (!p) { box.appendChild(el("p", "muted", "No payout waiting.")); return; }
    const todo = {};
    ((v.settlement && v.settlement.hand_id === p.hand_id && v.settlement.seats) || []).forEach((s) =>
      s.wagers.forEach((w) => { todo[s.seat + "/" + w.spot] = w.text; }));
    const table = el("table", "grid");
    const head = el("tr");
    ["Seat", "Spot", "Result", "Pay / take", "Must hold", "Holds", "State"].forEach((h) => head.appendChild(el("th", null, h)));
    table.appendChild(head);
    p.spots.forEach((s) => {
      const row = el("tr", "pay-" + s.state);
      row.dataset.seat = String(s.seat); row.dataset.spot = s.spot; row.dataset.state = s.state;
      [String(s.seat), s.label, s.result].forEach((c) => row.appendChild(el("td", null, c)));
      const net = s.net && s.net.cents;
      row.appendChild(el("td", "paytake", todo[s.seat + "/" + s.spot] ||
        (net > 0 ? "pay " + shown(s.net) : net < 0 ? "take " + rand(-net) : "push")));
      [shown(s.expected), shown(s.held) + (s.keyed ? " (keyed)" : ""),
       s.state === "paid" ? "paid" : s.state === "over" ? "OVER" : "waiting"].forEach((c) => row.appendChild(el("td", null, c)));
      table.appendChild(row);
    });
    box.appendChild(table);
  }

  function renderSettlement(v) {
    const box = $("settlement"); clear(box);
    const st = v.settlement;
    $("settle-hand").textContent = st ? st.hand_id + " · dealer " + (st.dealer_hand || "") +
      (st.dealer_opens === false ? " (does not open)" : "") : "";
    box.closest(".panel").classList.toggle("empty", !st);
    if (!st) { box.appendChild(el("p", "muted", "No hand settled yet.")); return; }
    const table = el("table", "grid");
    const head = el("tr");
    ["Seat", "Spot", "Result", "Reason", "Pay / take"].forEach((h) => head.appendChild(el("th", null, h)));
    table.appendChild(head);
    st.seats.forEach((s) => s.wagers.forEach((w) => {
      const row = el("tr", "res-" + w.result);
      row.dataset.seat = String(s.seat); row.dataset.spot = w.spot;
      [String(s.seat), w.label, w.result, w.reason || ""].forEach((c) => row.appendChild(el("td", null, c)));
      row.appendChild(el("td", "paytake", w.text));
      table.appendChild(row);
    }));
    box.appendChild(table);
  }

  function renderRecall(v) {
    const box = $("recall"); clear(box);
    if (!v.recall || !v.recall.length) { box.appendChild(el("p", "muted", "No hands yet.")); return; }
    const table = el("table", "grid recall");
    const head = el("tr");
    ["Hand", "Time", "Dealer", "Board", "Seats (hole, net)", ""].forEach((h) => head.appendChild(el("th", null, h)));
    table.appendChild(head);
    v.recall.forEach((r) => {
      const row = el("tr", r.status === "void" ? "void" : "");
      row.dataset.hand = r.hand_id;
      row.appendChild(el("td", null, r.hand_id));
      row.appendChild(el("td", null, (r.at || "").replace("T", " ").slice(0, 19)));
      row.appendChild(el("td", null, r.dealer.join(" ")));
      row.appendChild(el("td", null, r.board.join(" ")));
      row.appendChild(el("td", null, r.seats.map((s) => s.seat + ": " + s.hole.join(" ") + " " + shown(s.net)).join(" · ")));
      const last = el("td", null, (r.manual ? "MANUAL " : "") + (r.status === "void" ? "void: " + (r.void_reason || "") : ""));
      if (r.status === "settled") {
        const button = el("button", "button small", "Dispute");
        button.type = "button";
        button.dataset.dispute = r.hand_id;
        button.addEventListener("click", () => disputeHand(r));
        last.appendChild(button);
      }
      row.appendChild(last);
      table.appendChild(row);
    });
    box.appendChild(table);
  }

  /* A small form in the dialog: fields [{name, label, type, options, value}] -> values or null. */
  function ask(title, text, fields) {
    return new Promise((resolve) => {
      $("ask-title").textContent = title;
      $("ask-text").textContent = text || "";
      const box = $("ask-fields"); clear(box);
      const inputs = {};
      fields.forEach((f) => {
        const label = el("label", "field", f.label + " ");
        let input;
        if (f.type === "select") {
          input = el("select");
          f.options.forEach((o) => { const opt = el("option", null, o[1]); opt.value = o[0]; input.appendChild(opt); });
        } else {
          input = el("input");
          input.autocomplete = "off";
          if (f.placeholder) input.placeholder = f.placeholder;
        }
        input.name = f.name;
        input.id = "ask-" + f.name;
        if (f.value !== undefined) input.value = f.value;
        inputs[f.name] = input;
        label.appendChild(input);
        box.appendChild(label);
        if (f.type === "card") box.appendChild(cardPicker(input));
        if (f.quick) {
          const quick = el("div", "quick");
          f.quick.forEach((q) => { const b = el("button", "button small quiet", q); b.type = "button";
            b.addEventListener("click", () => { input.value = q; }); quick.appendChild(b); });
          box.appendChild(quick);
        }
      });
      const form = $("ask-form");
      const overlay = $("ask");
      const finish = (values) => { form.onsubmit = null; cancel.onclick = null; overlay.classList.add("hidden"); resolve(values); };
      const cancel = overlay.querySelector("[data-close]");
      cancel.onclick = () => finish(null);
      form.onsubmit = (e) => {
        e.preventDefault();
        const values = {};
        Object.keys(inputs).forEach((k) => { values[k] = inputs[k].value.trim(); });
        finish(values);
      };
      overlay.classList.remove("hidden");
      const first = box.querySelector("input,select");
      if (first) first.focus();
    });
  }

  function cardPicker(input) {
    const box = el("div", "picker");
    let rank = "";
    const ranks = el("div", "ranks");
    "AKQJT98765432".split("").forEach((r) => {
      const b = el("button", "key", r === "T" ? "10" : r); b.type = "button";
      b.addEventListener("click", () => { rank = r; input.value = r; });
      ranks.appendChild(b);
    });
    const suits = el("div", "suits");
    "shdc".split("").forEach((s) => {
      const b = el("button", "key" + (RED[s] ? " red" : ""), SUITS[s]); b.type = "button";
      b.addEventListener("click", () => { input.value = (rank || input.value.slice(0, 1)) + s; });
      suits.appendChild(b);
    });
    box.appendChild(ranks); box.appendChild(suits);
    return box;
  }

  /* Resolve an alert; identical alerts shown as one (alert_ids) are each resolved with the
     same reason, each its own record; the banner shows the first refusal, if any. */
  async function resolve(alert) {
    const ids = (alert.alert_ids && alert.alert_ids.length) ? alert.alert_ids : [alert.alert_id];
    const got = await ask("Resolve alert " + ids.join(", "), alert.message + " — " + alert.what_to_do,
      [{ name: "reason", label: "How it was fixed", quick: ["corrected on the table", "read again, card set aside", "chips returned to the player"] }]);
    if (!got) return;
    if (!got.reason) { banner("a resolution needs a reason", "bad"); return; }
    // one act for a collapsed line: all its alerts resolved, or none (resolve_alerts, D343)
    if (ids.length === 1) await act("resolve_alert", { alert_id: ids[0], reason: got.reason }, "alert " + ids[0] + " resolved");
    else await act("resolve_alerts", { alert_ids: ids, reason: got.reason }, "alerts " + ids.join(", ") + " resolved");
  }

  async function clearFault(alert) {
    const got = await ask("Clear the " + alert.role + " fault", alert.message + " — " + alert.what_to_do,
      [{ name: "reason", label: "Why play goes on", quick: ["reader replaced", "going on by manual entry"] }]);
    if (!got) return;
    if (!got.reason) { banner("clearing a fault needs a reason", "bad"); return; }
    await act("clear_fault", { role: alert.role, reason: got.reason }, alert.role + " fault cleared");
  }

  /* A dealer or supervisor disputes one seat's result in a settled hand (hand.disputed); a
     supervisor rules on it at the desk (docs/disputes.md). */
  async function disputeHand(r) {
    const seats = (r.seats || []).map((s) => [String(s.seat), "Seat " + s.seat + " (" + entryLabel(s) + ") " + shown(s.net)]);
    const got = await ask("Dispute hand " + r.hand_id, "Raise a dispute for a supervisor's ruling; the hand's record is kept as it is.", [
      { name: "seat", label: "Seat", type: "select", options: seats },
      { name: "reason", label: "What is wrong", quick: ["paid short", "paid over", "misdealt"] }]);
    if (!got) return;
    if (!got.reason) { banner("a dispute needs to say what is wrong", "bad"); return; }
    await act("dispute_hand", { hand_id: r.hand_id, seat: Number(got.seat), reason: got.reason }, "dispute of " + r.hand_id + " raised");
  }

  function seatOptions(v) {
    return (v.seats || []).map((s) => [String(s.seat), "Seat " + s.seat + " (" + entryLabel(s) + ")"]);
  }

  async function action(name) {
    const v = state.view || {};
    if (name === "no_more_bets" || name === "settle" || name === "reveal") {
      const labels = { no_more_bets: "no more bets", settle: "settled", reveal: "revealed" };
      await act(name, {}, (a) => labels[name] + (a.detail && a.detail.hand_id ? ": hand " + a.detail.hand_id : ""));
      return;
    }
    if (name === "payout_check") {  // ok only when nothing is left to pay or take (D335)
      await act(name, {}, (a) => (a.detail && a.detail.message) ||
        "payout of hand " + ((a.detail && a.detail.hand_id) || "") + " verified");
      return;
    }
    if (name === "void" || name === "payout_override") {
      const title = name === "void" ? "Void the hand" : "Override the payout check";
      const got = await ask(title, "A supervisor's action: say why.", [{ name: "reason", label: "Reason" }]);
      if (!got) return;
      if (!got.reason) { banner("this action needs a reason", "bad"); return; }
      await act(name, { reason: got.reason }, name === "void" ? "hand voided" : "payout overridden");
      return;
    }
    if (name === "correct_card") {
      const cards = (v.hand && v.hand.cards) || [];
      const got = await ask("Correct a card", "Replace a misread card (the original read stays in the record).", [
        { name: "position", label: "Card", type: "select", options: cards.map((c) => [String(c.position), c.target + ": " + c.card]) },
        { name: "card", label: "Actual card (e.g. Kd)", type: "card", placeholder: "Kd" },
        { name: "reason", label: "Reason" }]);
      if (!got) return;
      await act(name, { position: Number(got.position), card: got.card, reason: got.reason }, "card corrected");
      return;
    }
    if (name === "issue_chips" || name === "return_chips") {
      const issuing = name === "issue_chips";
      const waiting = Object.entries((v.chips && v.chips.waiting_return) || {})
        .map(([seat, entry]) => [seat, "Seat " + seat + " (" + entry + ")"]);
      const options = issuing ? seatOptions(v) : waiting;
      if (!options.length) { banner(issuing ? "no entry is seated" : "no chips are waiting to be returned", "bad"); return; }
      const got = await ask(issuing ? "Issue the starting stack" : "Chips returned",
        issuing ? "Place the starting stack from the tray on the seat's spots, then issue it."
                : "Place all the entry's chips on its seat's spots, then confirm.",
        [{ name: "seat", label: "Seat", type: "select", options: options }]);
      if (!got) return;
      await act(name, { seat: Number(got.seat) }, issuing ? "chips issued" : "chips returned");
      return;
    }
    if (name === "manual_card") {
      const got = await ask("Manual card", "Key the next card by hand (the hand is marked manual).",
        [{ name: "card", label: "Card (e.g. As)", type: "card", placeholder: "As" }]);
      if (!got) return;
      await act(name, { card: got.card }, "card " + got.card + " keyed");
      return;
    }
    if (name === "manual_wager") {
      const got = await ask("Manual wager", "Key what lies on a spot, in rand (the hand is marked manual).", [
        { name: "seat", label: "Seat", type: "select", options: seatOptions(v) },
        { name: "spot", label: "Spot", type: "select", options: SPOTS },
        { name: "amount", label: "Amount (rand)", placeholder: "R25.00" }]);
      if (!got) return;
      const cents = parseRand(got.amount);
      if (cents === null) { banner("give the amount in rand, e.g. R25.00", "bad"); return; }
      await act(name, { seat: Number(got.seat), spot: got.spot, amount: cents }, rand(cents) + " keyed");
    }
  }

  function init() {
    keypads();
    $("sign-in-open").addEventListener("click", () => { $("staff-id").value = ""; $("staff-pin").value = ""; openOverlay("sign-in"); $("staff-id").focus(); });
    $("sign-in-pin").addEventListener("click", async () => {
      const answer = await post("/api/sign-in", { staff_id: $("staff-id").value.trim(), pin: $("staff-pin").value });
      $("staff-pin").value = "";
      if (answer.ok === true) closeOverlay("sign-in");
      show(answer, (a) => "signed in: " + a.detail.name + " (" + a.detail.role + ")");
      if (answer.ok === true) connect();
    });
    $("sign-in-card").addEventListener("click", async () => {
      $("sign-in-wait").classList.remove("hidden");
      $("sign-in").dataset.waiting = "1";
      delete $("sign-in").dataset.cancelled;
      const answer = await post("/api/sign-in", { method: "card", wait: 30 });
      const cancelled = $("sign-in").dataset.cancelled;
      delete $("sign-in").dataset.waiting;
      delete $("sign-in").dataset.cancelled;
      $("sign-in-wait").classList.add("hidden");
      if (answer.ok === true) closeOverlay("sign-in");
      if (answer.ok === true || !cancelled) show(answer, (a) => "signed in: " + a.detail.name + " (" + a.detail.role + ")");
      if (answer.ok === true) connect();
    });
    $("sign-out").addEventListener("click", async () => {
      const answer = await post("/api/sign-out", {});
      show(answer, (a) => "signed out: " + ((a.detail && a.detail.signed_out) || ""));
      connect();
    });
    document.querySelectorAll("#actions [data-action]").forEach((b) => {
      if (OWN.indexOf(b.dataset.action) >= 0) b.addEventListener("click", () => action(b.dataset.action));
    });
    setInterval(() => { if (state.view) renderSeats(state.view); }, 1000);
  }

  S.pages.dealer = { init: init, render: renderDealer };
  Object.assign(S, { ask: ask, cardPicker: cardPicker, seatOptions: seatOptions });
})();
