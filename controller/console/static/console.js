/* The table console's pages: the dealer's touch screen, the participant's view, the slip's
   Print button. One file, no build step, no external assets. Everything shown is built with
   createElement/textContent (never HTML from data). The session lives in an HttpOnly cookie:
   this script never sees it. Amounts are shown in rand; a wager keyed in rand is sent in cents. */
"use strict";

(function () {
  const page = document.body.dataset.page || "";
  const $ = (id) => document.getElementById(id);
  const state = { view: null, me: null, received: 0 };
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

  let bannerTimer = null;
  function banner(text, kind) {
    const node = $("banner");
    if (!node) return;
    node.textContent = text;
    node.className = "banner " + (kind || "bad");
    node.dataset.kind = kind || "bad";
    if (bannerTimer) clearTimeout(bannerTimer);
    if (kind === "good") bannerTimer = setTimeout(() => node.classList.add("hidden"), 6000);
  }

  async function post(path, body) {
    let answer;
    try {
      const response = await fetch(path, {
        method: "POST", credentials: "same-origin", cache: "no-store",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
      });
      answer = await response.json();
      answer.status = response.status;
    } catch (err) {
      answer = { ok: false, error: "the table did not answer: " + err };
    }
    return answer;
  }

  async function act(action, fields, done) {
    const answer = await post("/api/action", Object.assign({ action: action }, fields || {}));
    if (answer.ok) banner(done || (action.replace(/_/g, " ") + ": done"), "good");
    else banner(answer.error || "refused", "bad");
    if (answer.status === 401) connect();
    return answer;
  }

  function openOverlay(id) { const o = $(id); if (o) o.classList.remove("hidden"); }
  function closeOverlay(id) { const o = $(id); if (o) o.classList.add("hidden"); }

  document.querySelectorAll("[data-close]").forEach((b) => b.addEventListener("click", () => {
    const overlay = b.closest(".overlay");
    if (overlay) overlay.classList.add("hidden");
    if (overlay && overlay.dataset.waiting) post("/api/action", { action: "cancel_tap" });
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
      phase.textContent = "Payout: pay and take, then Payout done";
      phase.className = "phase warn";
      phase.dataset.phase = "payout";
    } else {
      phase.textContent = v.heat ? "Between hands: place your bets" : "No heat open";
      phase.className = "phase";
      phase.dataset.phase = "idle";
    }
    if (page === "dealer") renderDealer(v);
    if (page === "player") renderPlayer(v);
  }

  // ---- the dealer's screen ----------------------------------------------------------------

  function renderDealer(v) {
    const me = state.me;
    $("me").textContent = me ? me.name + " (" + me.role + ")" : "not signed in";
    $("me").dataset.role = me ? me.role : "";
    $("sign-in-open").classList.toggle("hidden", !!me);
    $("sign-out").classList.toggle("hidden", !me);
    const hand = v.hand;
    const dealer = $("dealer-cards"); clear(dealer);
    const dealerCards = hand ? hand.dealer : [];
    for (let i = 0; i < 2; i++) dealer.appendChild(cardNode(dealerCards[i]));
    const board = $("board"); clear(board);
    (hand ? hand.board : [null, null, null, null, null]).forEach((c) => board.appendChild(cardNode(c)));
    const burns = $("burns"); clear(burns);
    (hand ? hand.burns : []).forEach((c) => burns.appendChild(cardNode(c, "small")));
    $("hand-line").textContent = hand
      ? "Hand " + hand.hand_id + " · " + hand.cards.length + " cards read" +
        (hand.next_target ? " · next: " + hand.next_target : "") + (hand.manual ? " · MANUAL" : "")
      : (v.last_hand ? "Last hand " + v.last_hand.hand_id + " (" + v.last_hand.status + ")" : "");
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
      s.entry_id + " · " + shown(s.score) + " · " + s.hands + " hands" + (s.disputed ? " · DISPUTED: " + s.note : ""))));
    const can = hand ? hand.can : {};
    document.querySelectorAll("#actions [data-action]").forEach((b) => {
      const a = b.dataset.action;
      const ready = (a === "no_more_bets" && (!hand || can.no_more_bets)) ||
        (a === "settle" && can.settle) || (a === "reveal" && can.reveal) ||
        ((a === "payout_check" || a === "payout_override") && v.payout);
      b.classList.toggle("ready", !!ready);
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
      head.appendChild(el("span", "entry", s.entry_id));
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
      s.hole.forEach((c) => hole.appendChild(cardNode(c)));
      card.appendChild(hole);
      const decisions = el("div", "decisions");
      s.decisions.forEach((d) => decisions.appendChild(el("span", "decision " + d.decision, d.text)));
      card.appendChild(decisions);
      box.appendChild(card);
    });
  }

  function renderAlerts(v) {
    const box = $("alerts"); clear(box);
    if (!v.alerts || !v.alerts.length) { box.appendChild(el("p", "muted", "No alerts.")); return; }
    v.alerts.forEach((a) => {
      const item = el("div", "alert" + (a.resolvable ? " hand-alert" : " notice"));
      if (a.alert_id !== null) item.dataset.alertId = String(a.alert_id);
      item.dataset.kind = a.kind;
      item.appendChild(el("div", "alert-kind", a.kind.replace(/_/g, " ") + (a.seat ? " · seat " + a.seat : "")));
      item.appendChild(el("div", "alert-message", a.message));
      item.appendChild(el("div", "what-to-do", "What to do: " + a.what_to_do));
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

  function renderPayout(v) {
    const box = $("payout"); clear(box);
    const p = v.payout;
    $("payout-state").textContent = p ? "hand " + p.hand_id : "";
    if (!p) { box.appendChild(el("p", "muted", "No payout waiting.")); return; }
    const table = el("table", "grid");
    const head = el("tr");
    ["Seat", "Spot", "Result", "Must hold", "Holds", "State"].forEach((h) => head.appendChild(el("th", null, h)));
    table.appendChild(head);
    p.spots.forEach((s) => {
      const row = el("tr", "pay-" + s.state);
      row.dataset.seat = String(s.seat); row.dataset.spot = s.spot; row.dataset.state = s.state;
      [String(s.seat), s.label, s.result, shown(s.expected), shown(s.held) + (s.keyed ? " (keyed)" : ""),
       s.state === "paid" ? "paid" : s.state === "over" ? "OVER" : "waiting"].forEach((c) => row.appendChild(el("td", null, c)));
      table.appendChild(row);
      if (s.what_to_do) {
        const todo = el("tr", "pay-todo");
        const cell = el("td", null, s.what_to_do); cell.colSpan = 6; todo.appendChild(cell);
        table.appendChild(todo);
      }
    });
    box.appendChild(table);
  }

  function renderSettlement(v) {
    const box = $("settlement"); clear(box);
    const st = v.settlement;
    $("settle-hand").textContent = st ? st.hand_id + " · dealer " + (st.dealer_hand || "") +
      (st.dealer_opens === false ? " (does not open)" : "") : "";
    if (!st) { box.appendChild(el("p", "muted", "No hand settled yet.")); return; }
    const table = el("table", "grid");
    const head = el("tr");
    ["Seat", "Spot", "Result", "Reason", "Pay / take"].forEach((h) => head.appendChild(el("th", null, h)));
    table.appendChild(head);
    st.seats.forEach((s) => s.wagers.forEach((w) => {
      const row = el("tr", "res-" + w.result);
      [String(s.seat), w.label, w.result, w.reason || "", w.text].forEach((c) => row.appendChild(el("td", null, c)));
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
      row.appendChild(el("td", null, (r.manual ? "MANUAL " : "") + (r.status === "void" ? "void: " + (r.void_reason || "") : "")));
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

  async function resolve(alert) {
    const got = await ask("Resolve alert " + alert.alert_id, alert.message + " — " + alert.what_to_do,
      [{ name: "reason", label: "How it was fixed", quick: ["corrected on the table", "read again, card set aside", "chips returned to the player"] }]);
    if (!got) return;
    if (!got.reason) { banner("a resolution needs a reason", "bad"); return; }
    await act("resolve_alert", { alert_id: alert.alert_id, reason: got.reason }, "alert " + alert.alert_id + " resolved");
  }

  function seatOptions(v) {
    return (v.seats || []).map((s) => [String(s.seat), "Seat " + s.seat + " (" + s.entry_id + ")"]);
  }

  async function action(name) {
    const v = state.view || {};
    if (name === "no_more_bets" || name === "settle" || name === "reveal" || name === "payout_check") {
      const labels = { no_more_bets: "no more bets", settle: "settled", reveal: "revealed", payout_check: "payout checked" };
      await act(name, {}, labels[name]);
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

  function dealer() {
    keypads();
    $("sign-in-open").addEventListener("click", () => { $("staff-id").value = ""; $("staff-pin").value = ""; openOverlay("sign-in"); $("staff-id").focus(); });
    $("sign-in-pin").addEventListener("click", async () => {
      const answer = await post("/api/sign-in", { staff_id: $("staff-id").value.trim(), pin: $("staff-pin").value });
      $("staff-pin").value = "";
      if (answer.ok) { closeOverlay("sign-in"); banner("signed in: " + answer.detail.name + " (" + answer.detail.role + ")", "good"); connect(); }
      else banner(answer.error || "sign-in refused", "bad");
    });
    $("sign-in-card").addEventListener("click", async () => {
      $("sign-in-wait").classList.remove("hidden");
      $("sign-in").dataset.waiting = "1";
      const answer = await post("/api/sign-in", { method: "card", wait: 30 });
      delete $("sign-in").dataset.waiting;
      $("sign-in-wait").classList.add("hidden");
      if (answer.ok) { closeOverlay("sign-in"); banner("signed in: " + answer.detail.name, "good"); connect(); }
      else banner(answer.error || "sign-in refused", "bad");
    });
    $("sign-out").addEventListener("click", async () => {
      const answer = await post("/api/sign-out", {});
      banner(answer.ok ? "signed out" : (answer.error || "not signed in"), answer.ok ? "good" : "bad");
      connect();
    });
    document.querySelectorAll("#actions [data-action]").forEach((b) => b.addEventListener("click", () => action(b.dataset.action)));
    setInterval(() => { if (state.view) renderSeats(state.view); }, 1000);
  }

  // ---- the participant's view ------------------------------------------------------------

  const acknowledged = [];  // scores acknowledged at this screen: their slip links stay

  function renderPlayer(v) {
    const scores = $("scores"); clear(scores);
    (v.scores || []).forEach((s) => {
      const card = el("article", "score-card" + (s.disputed ? " disputed" : ""));
      card.dataset.entry = s.entry_id;
      card.appendChild(el("div", "entry", "Entry " + s.entry_id + (s.seat ? " · seat " + s.seat : "")));
      card.appendChild(el("div", "big-score", shown(s.score)));
      card.appendChild(el("div", "facts", s.hands + " hands · " + s.status.replace(/_/g, " ")));
      if (s.disputed) card.appendChild(el("div", "bad", "Disputed: " + s.note + " (a supervisor will come)"));
      const row = el("div", "row");
      const ok = el("button", "button go", "Acknowledge"); ok.type = "button"; ok.dataset.ack = s.entry_id;
      ok.addEventListener("click", () => openAck(s));
      const no = el("button", "button warn", "Dispute"); no.type = "button"; no.dataset.dispute = s.entry_id;
      no.addEventListener("click", () => openDispute(s));
      row.appendChild(ok); row.appendChild(no);
      card.appendChild(row);
      scores.appendChild(card);
    });
    const done = $("done"); clear(done);
    acknowledged.forEach((a) => {
      const card = el("article", "score-card done-card");
      card.dataset.entry = a.entry_id;
      card.appendChild(el("div", "entry", "Entry " + a.entry_id + ": score acknowledged, " + a.score));
      const link = el("a", "button", "Print your score slip");
      link.href = "/slip/" + encodeURIComponent(a.entry_id);
      link.dataset.slip = a.entry_id;
      card.appendChild(link);
      done.appendChild(card);
    });
    const seats = $("player-seats"); clear(seats);
    if (!v.seats || !v.seats.length) seats.appendChild(el("p", "muted", "No entry is seated."));
    (v.seats || []).forEach((s) => {
      const card = el("article", "player-seat");
      card.dataset.seat = String(s.seat);
      card.appendChild(el("div", "seat-no", "Seat " + s.seat));
      card.appendChild(el("div", "entry", s.entry_id));
      card.appendChild(el("div", "chips", shown(s.chips)));
      card.appendChild(el("div", "facts", s.hands_left + " hands left of " + s.hands_total));
      if (s.markers_total) card.appendChild(el("div", "facts", s.markers_left + " bonus markers left"));
      seats.appendChild(card);
    });
  }

  let current = null;
  let drawn = false;

  function methods() { return (state.view && state.view.console.acknowledge_with) || ["card"]; }

  function openAck(score) {
    current = score;
    $("ack-score").textContent = score.entry_id + ": " + shown(score.score);
    const m = methods();
    $("ack-card").classList.toggle("hidden", m.indexOf("card") < 0);
    $("ack-pin").classList.toggle("hidden", m.indexOf("pin") < 0);
    $("ack-signature").classList.toggle("hidden", m.indexOf("signature") < 0);
    $("ack-pin-input").value = "";
    clearSignature();
    openOverlay("ack");
  }

  function openDispute(score) {
    current = score;
    $("dispute-score").textContent = score.entry_id + ": " + shown(score.score);
    $("dispute-note").value = "";
    openOverlay("dispute");
  }

  function clearSignature() {
    const canvas = $("signature");
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    drawn = false;
  }

  function signaturePad() {
    const canvas = $("signature");
    const ctx = canvas.getContext("2d");
    let last = null;
    const at = (e) => { const r = canvas.getBoundingClientRect();
      return [(e.clientX - r.left) * canvas.width / r.width, (e.clientY - r.top) * canvas.height / r.height]; };
    canvas.addEventListener("pointerdown", (e) => { canvas.setPointerCapture(e.pointerId); last = at(e); });
    canvas.addEventListener("pointermove", (e) => {
      if (!last) return;
      const p = at(e);
      ctx.strokeStyle = "#000000"; ctx.lineWidth = 4; ctx.lineCap = "round";
      ctx.beginPath(); ctx.moveTo(last[0], last[1]); ctx.lineTo(p[0], p[1]); ctx.stroke();
      last = p; drawn = true;
    });
    const up = () => { last = null; };
    canvas.addEventListener("pointerup", up);
    canvas.addEventListener("pointercancel", up);
    $("signature-clear").addEventListener("click", clearSignature);
    clearSignature();
  }

  async function acknowledge() {
    if (!current) return;
    const m = methods();
    const fields = { entry_id: current.entry_id };
    if (m.indexOf("pin") >= 0) fields.pin = $("ack-pin-input").value;
    if (m.indexOf("signature") >= 0) {
      if (!drawn) { banner("sign on the screen first", "bad"); return; }
      fields.signature = $("signature").toDataURL("image/png");
    }
    if (m.indexOf("card") >= 0) { fields.wait = 30; $("ack-wait").classList.remove("hidden"); $("ack").dataset.waiting = "1"; }
    const score = current;
    const answer = await act("acknowledge", fields, "score acknowledged: thank you");
    $("ack-wait").classList.add("hidden");
    delete $("ack").dataset.waiting;
    $("ack-pin-input").value = "";
    if (answer.ok) {
      closeOverlay("ack");
      acknowledged.unshift({ entry_id: score.entry_id, score: shown(score.score) });
      render();
    }
  }

  async function dispute() {
    if (!current) return;
    const note = $("dispute-note").value.trim();
    if (!note) { banner("say what is wrong with the score", "bad"); return; }
    const answer = await act("dispute", { entry_id: current.entry_id, note: note }, "dispute sent: a supervisor will come");
    if (answer.ok) closeOverlay("dispute");
  }

  function player() {
    keypads();
    signaturePad();
    $("ack-ok").addEventListener("click", acknowledge);
    $("dispute-ok").addEventListener("click", dispute);
  }

  // ---- start ---------------------------------------------------------------------------

  const bannerNode = $("banner");
  if (bannerNode) bannerNode.addEventListener("click", () => bannerNode.classList.add("hidden"));
  document.querySelectorAll("[data-print]").forEach((b) => b.addEventListener("click", () => window.print()));
  if (page === "dealer") dealer();
  if (page === "player") player();
  if (page === "dealer" || page === "player") { refresh(); connect(); }
})();
