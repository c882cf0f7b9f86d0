/* The participant's view (after console.js): chips, hands and markers left, the score with
   Acknowledge (rewards card, PIN keypad, signature canvas) and Dispute, the slip link. */
"use strict";

(function () {
  const S = window.Showdown;
  const { $, el, clear, rand, shown, entryLabel, parseRand, cardNode, ago, banner, show, post, act,
    openOverlay, closeOverlay, keypads, connect, render, state, SUITS, RED, SPOTS } = S;

  // ---- the participant's view ------------------------------------------------------------

  const acknowledged = [];  // scores acknowledged at this screen: their slip links stay

  function renderPlayer(v) {
    const scores = $("scores"); clear(scores);
    (v.scores || []).forEach((s) => {
      const card = el("article", "score-card" + (s.disputed ? " disputed" : ""));
      card.dataset.entry = s.entry_id;
      card.appendChild(el("div", "entry", "Entry " + entryLabel(s) + (s.seat ? " · seat " + s.seat : "")));
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
      card.appendChild(el("div", "entry", "Entry " + entryLabel(a) + ": score acknowledged, " + a.score));
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
      card.appendChild(el("div", "entry", entryLabel(s)));
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
    $("ack-score").textContent = entryLabel(score) + ": " + shown(score.score);
    const m = methods();
    $("ack-card").classList.toggle("hidden", m.indexOf("card") < 0);
    $("ack-pin").classList.toggle("hidden", m.indexOf("pin") < 0);
    $("ack-pin-pad").classList.toggle("hidden", m.indexOf("pin") < 0);
    $("ack-cols").classList.toggle("no-pad", m.indexOf("pin") < 0);
    $("ack-signature").classList.toggle("hidden", m.indexOf("signature") < 0);
    $("ack-pin-input").value = "";
    clearSignature();
    openOverlay("ack");
  }

  function openDispute(score) {
    current = score;
    $("dispute-score").textContent = entryLabel(score) + ": " + shown(score.score);
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
    delete $("ack").dataset.cancelled;
    const score = current;
    const answer = await post("/api/action", Object.assign({ action: "acknowledge" }, fields));
    const cancelled = $("ack").dataset.cancelled;  // Cancel pressed while waiting for the card
    if (answer.ok === true || !cancelled) show(answer, "score acknowledged: thank you");
    $("ack-wait").classList.add("hidden");
    delete $("ack").dataset.waiting;
    delete $("ack").dataset.cancelled;
    $("ack-pin-input").value = "";
    if (answer.ok === true) {
      closeOverlay("ack");
      acknowledged.unshift({ entry_id: score.entry_id, entry_code: score.entry_code, name: score.name, score: shown(score.score) });
      render();
    }
  }

  async function dispute() {
    if (!current) return;
    const note = $("dispute-note").value.trim();
    if (!note) { banner("say what is wrong with the score", "bad"); return; }
    const answer = await act("dispute", { entry_id: current.entry_id, note: note }, "dispute sent: a supervisor will come");
    if (answer.ok === true) closeOverlay("dispute");
  }

  function init() {
    keypads();
    signaturePad();
    $("ack-ok").addEventListener("click", acknowledge);
    $("dispute-ok").addEventListener("click", dispute);
  }

  S.pages.player = { init: init, render: renderPlayer };
})();
