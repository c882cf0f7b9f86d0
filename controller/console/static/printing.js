/* The dealer's screen (after dealer.js): the score slip printed on the table's receipt printer.
   Registered with Showdown.extend("dealer", {init, render}).

   A panel of its own ("Score slips") lists the latest scores recorded at this table (GET
   /api/slips, read again whenever the scores waiting change and after each print): each with
   "Print slip" (the print_slip action: the banner says printed, or NOT printed and why, as the
   table answered) and "Open slip" (the HTML slip, printed from the browser). A table without a
   receipt printer offers only the HTML slip and says so. */
"use strict";

(function () {
  const S = window.Showdown;
  let panel = null;
  let list = null;
  let note = null;
  let seen = null; // the scores waiting, as last read: a change reads the list again
  let reading = false;
  let again = false;
  let printing = null; // the entry being printed: its button waits

  function label(s) {
    return S.entryLabel(s) + " · " + s.score + " · " + s.at + (s.acknowledged ? " · acknowledged" : "");
  }

  function lastPrint(s) {
    const last = s.last_print;
    if (!last) return null;
    const who = last.by ? "by " + last.by : "by itself on acknowledgement";
    return last.printed ? "printed " + last.at + " " + who
      : "NOT printed " + last.at + ": " + last.error;
  }

  function show(data) {
    const printer = data.printer || { kind: "none" };
    const has = printer.kind && printer.kind !== "none";
    note.textContent = has
      ? "Receipt printer: " + (printer.name || printer.kind)
        + (printer.auto ? " · prints by itself when a score is acknowledged" : "")
      : "No receipt printer at this table: open a slip and print it from the browser.";
    S.clear(list);
    const slips = data.slips || [];
    if (!slips.length) list.appendChild(S.el("p", "muted", "No score recorded at this table yet."));
    slips.forEach((s) => {
      const row = S.el("div", "slip-line");
      row.dataset.entry = s.entry_id;
      row.appendChild(S.el("span", "slip-what", label(s)));
      const status = lastPrint(s);
      if (status) row.appendChild(S.el("span", "slip-printed" + (s.last_print.printed ? "" : " bad"), status));
      const buttons = S.el("span", "row");
      if (has) {
        const b = S.el("button", "button small", printing === s.entry_id ? "Printing…" : "Print slip");
        b.type = "button";
        b.dataset.printSlip = s.entry_id;
        b.disabled = printing !== null;
        b.addEventListener("click", () => press(s));
        buttons.appendChild(b);
      }
      const open = S.el("a", "button small quiet", "Open slip");
      open.href = "/slip/" + encodeURIComponent(s.entry_id);
      open.target = "_blank";
      open.rel = "noopener";
      buttons.appendChild(open);
      row.appendChild(buttons);
      list.appendChild(row);
    });
  }

  async function read() {
    if (reading) { again = true; return; }
    reading = true;
    try {
      const response = await fetch("/api/slips", { credentials: "same-origin", cache: "no-store" });
      if (response.ok) show(await response.json());
    } catch (err) { /* read again at the next change */ }
    reading = false;
    if (again) { again = false; read(); }
  }

  async function press(s) {
    if (printing !== null) return;
    printing = s.entry_id;
    read();
    const who = s.entry_code || s.entry_id;
    // The banner is the table's answer: "Slip printed for ..." only when it printed, else
    // its words (NOT printed, and why).
    await S.act("print_slip", { entry_id: s.entry_id }, "Slip printed for " + who);
    printing = null;
    read();
  }

  function init() {
    const main = document.querySelector("main") || document.body;
    panel = S.el("section", "panel print-panel");
    panel.id = "print-slips";
    panel.setAttribute("aria-labelledby", "print-slips-title");
    const title = S.el("h2", "", "Score slips");
    title.id = "print-slips-title";
    note = S.el("p", "muted");
    note.id = "printer-note";
    list = S.el("div", "slip-list");
    list.id = "slip-list";
    panel.append(title, note, list);
    main.appendChild(panel);
  }

  function render(v) {
    if (!panel) return;
    const now = JSON.stringify((v.scores || []).map((s) => [s.entry_id, s.disputed]));
    if (now !== seen) {
      seen = now;
      read();
    }
  }

  S.extend("dealer", { init, render });
})();
