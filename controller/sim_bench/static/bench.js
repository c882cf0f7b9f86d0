// The technician's bench: buttons that drive the simulated devices of a running table
// (docs/operations/bench.md). Every action shows the bench's own answer, a refusal in red.
"use strict";

const RANKS = ["A", "K", "Q", "J", "T", "9", "8", "7", "6", "5", "4", "3", "2"];
const SUITS = [["s", "♠"], ["h", "♥"], ["d", "♦"], ["c", "♣"]];
const SPOT_NAMES = ["ante", "odds", "play", "trips_plus", "pocket_bonus", "sweet16"];
let state = null;

function $(id) { return document.getElementById(id); }

function rand(cents) {
  const units = Math.floor(cents / 100).toLocaleString("en-ZA").replace(/\s/g, ",");
  return "R" + units + "." + String(cents % 100).padStart(2, "0");
}

function show(ok, text) {
  const answer = $("answer");
  answer.textContent = text;
  answer.className = ok ? "ok" : "refused";
}

async function act(path, body) {
  let reply;
  try {
    const response = await fetch("/api/" + path, {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify(body || {}),
    });
    reply = await response.json();
  } catch (err) {
    show(false, "the bench did not answer: " + err);
    return;
  }
  if (reply.ok) show(true, reply.done);
  else show(false, "refused: " + reply.error);
  await refresh();
}

// "R25", "25", "1,250.50" -> cents; null when it is not an amount
function cents(text) {
  const m = /^\s*R?\s*(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d{1,2}))?\s*$/i.exec(text);
  if (!m) return null;
  return parseInt(m[1].replace(/,/g, ""), 10) * 100 + parseInt((m[2] || "0").padEnd(2, "0"), 10);
}

function chipTarget() {
  return {seat: parseInt($("chip-seat").value, 10), spot: $("chip-spot").value};
}

function amountOr(show_error) {
  const value = cents($("chip-amount").value);
  if (value === null && show_error) show(false, "refused: amount: write rand, such as R25 or 25.50");
  return value;
}

function buildPicker() {
  const picker = $("card-picker");
  for (const [suit, symbol] of SUITS) {
    for (const rank of RANKS) {
      const b = document.createElement("button");
      b.dataset.card = rank + suit;
      b.textContent = (rank === "T" ? "10" : rank) + symbol;
      if (suit === "h" || suit === "d") b.classList.add("red");
      b.addEventListener("click", () => act("shoe/deal", {card: b.dataset.card}));
      picker.appendChild(b);
    }
  }
}

function render(s) {
  $("table").textContent = s.table;
  $("heat").textContent = s.heat || "-";
  $("hand").textContent = s.hand || "-";
  $("phase").textContent = s.phase ? "(" + s.phase + ")" : "";
  const link = $("console-link");
  if (s.console) link.href = s.console;
  for (const role of ["shoe", "rfid", "id_reader"]) {
    const d = s.devices[role];
    const tag = document.querySelector("#" + role + " .plug-state");
    if (!d.simulated) { tag.textContent = "(not simulated)"; continue; }
    tag.textContent = d.plugged ? "plugged in" : "UNPLUGGED";
    tag.className = "plug-state" + (d.plugged ? "" : " unplugged");
  }
  const shoe = s.devices.shoe;
  if (shoe.simulated) {
    const dealt = new Set(shoe.dealt);
    $("dealt").textContent = shoe.dealt.length ? shoe.dealt.join(" ") : "none";
    for (const b of $("card-picker").children) b.disabled = dealt.has(b.dataset.card);
  }
  const rfid = s.devices.rfid;
  if (rfid.simulated) renderChips(rfid);
  const faults = [];
  for (const role of ["shoe", "rfid", "id_reader"]) {
    for (const f of (s.devices[role].faults || [])) faults.push(role + ": " + f.name + " = " + f.value);
  }
  $("faults-on").textContent = faults.length ? "Faults on: " + faults.join("; ") : "No fault is on.";
}

function renderChips(rfid) {
  const seats = [...new Set(rfid.spots.map(([seat]) => seat))];
  const seatSelect = $("chip-seat");
  if (seatSelect.options.length !== seats.length) {
    seatSelect.innerHTML = "";
    for (const seat of seats) seatSelect.add(new Option("seat " + seat, String(seat)));
  }
  const spotSelect = $("chip-spot");
  const spots = SPOT_NAMES.filter((name) => rfid.spots.some(([, spot]) => spot === name));
  if (spotSelect.options.length !== spots.length) {
    spotSelect.innerHTML = "";
    for (const spot of spots) spotSelect.add(new Option(spot, spot));
  }
  const body = document.querySelector("#felt tbody");
  body.innerHTML = "";
  for (const seat of seats) {
    const info = rfid.seats[String(seat)];
    const lying = spots.filter((spot) => rfid.lying[seat + "/" + spot])
      .map((spot) => spot + " " + rand(rfid.lying[seat + "/" + spot]));
    const row = body.insertRow();
    row.dataset.seat = String(seat);
    row.insertCell().textContent = String(seat);
    row.insertCell().textContent = info ? info.entry_id : "-";
    row.insertCell().textContent = info ? rand(info.stack) : "-";
    const cell = row.insertCell();
    cell.className = "lying";
    cell.textContent = lying.join(", ") || "-";
  }
  $("tray").textContent = rand(rfid.tray);
}

async function refresh() {
  try {
    const response = await fetch("/api/state");
    state = await response.json();
    if (state.ok) render(state);
  } catch (err) { /* the next poll tries again */ }
}

function buildFaults() {
  const select = $("fault-name");
  for (const name of ["silent", "delay", "corrupt", "drop", "duplicate", "garbage", "repeat",
                      "drop_incoming"]) select.add(new Option(name, name));
}

function faultValue() {
  const text = $("fault-value").value.trim().toLowerCase();
  if (text === "true" || text === "on") return true;
  if (text === "false" || text === "off") return false;
  return text === "" ? null : Number(text);
}

function wire() {
  $("deal-next").addEventListener("click", () => act("shoe/deal", {}));
  $("place-stack").addEventListener("click", () => {
    const value = amountOr(true);
    if (value !== null) act("chips/place", {...chipTarget(), cents: value, from: "stack"});
  });
  $("place-tray").addEventListener("click", () => {
    const value = amountOr(true);
    if (value !== null) act("chips/place", {...chipTarget(), cents: value, from: "tray"});
  });
  $("take-amount").addEventListener("click", () => {
    const value = amountOr(true);
    if (value !== null) act("chips/take", {...chipTarget(), cents: value});
  });
  $("take-all").addEventListener("click", () => act("chips/take", chipTarget()));
  $("unknown-chip").addEventListener("click", () => act("chips/unknown", chipTarget()));
  document.querySelectorAll("[data-shoe-state]").forEach((b) =>
    b.addEventListener("click", () => act("shoe/state", {state: b.dataset.shoeState})));
  $("power-cycle").addEventListener("click", () => act("shoe/power", {}));
  $("tap").addEventListener("click", () => act("ids/tap", {
    number: $("tap-number").value, form: $("tap-form").value}));
  $("unplug").addEventListener("click", () => act($("fault-device").value + "/unplug"));
  $("plug").addEventListener("click", () => act($("fault-device").value + "/plug"));
  $("fault-set").addEventListener("click", () => {
    const value = faultValue();
    if (value === null || Number.isNaN(value)) {
      show(false, "refused: value: a number (a probability, or seconds of delay), or true/false");
      return;
    }
    act($("fault-device").value + "/fault", {name: $("fault-name").value, value});
  });
  $("fault-once").addEventListener("click", () =>
    act($("fault-device").value + "/fault", {name: $("fault-name").value}));
}

buildPicker();
buildFaults();
wire();
refresh();
setInterval(refresh, 700);
