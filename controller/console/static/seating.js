/* The dealer's screen (after dealer.js): the starting stack to issue at seating, confirmed by the chip reader.
   Registered with Showdown.extend("dealer", {init, render}).

   For every seated entry still waiting for its starting stack the view's chips.to_issue says what to
   place from the tray (amount and a suggested breakdown) and what the reader reads now (missing, over,
   chips that are not the tray's). The table issues the stack by itself once its reader reads exactly the
   stack (D346): there is no button to press; the "Issue chips" action stays as a fallback. */
"use strict";
(function () {
  const S = window.Showdown;
  if (!S) return;
  let panel = null;

  function init() {
    panel = S.el("section", "panel stacks-panel hidden");
    panel.id = "stacks";
    panel.setAttribute("aria-live", "polite");
    // On the table view above the seats it is for: in the grid's hand area at every size and
    // step (D338), where the dealer looks at seating, not under the page.
    const seats = S.$("seats");
    if (seats && seats.parentNode) seats.parentNode.insertBefore(panel, seats);
    else (document.querySelector("main") || document.body).appendChild(panel);
  }

  function line(x) {
    const row = S.el("div", "stack-line");
    row.dataset.seat = String(x.seat);
    const ready = !x.wrong.length && !x.missing_cents && !x.over_cents;
    row.classList.add(x.wrong.length || x.over_cents ? "stack-wrong" : ready ? "stack-ready" : "stack-short");
    row.appendChild(S.el("p", "stack-say", x.say));
    if (x.breakdown && x.breakdown.length) {
      const parts = x.breakdown.map((b) => b.count + " × " + b.value);
      row.appendChild(S.el("p", "stack-breakdown muted", "Suggested: " + parts.join(" + ")));
    }
    return row;
  }

  function render(v) {
    if (!panel) return;
    const waiting = (v && v.chips && v.chips.to_issue) || [];
    S.clear(panel);
    panel.classList.toggle("hidden", waiting.length === 0);
    if (!waiting.length) return;
    panel.appendChild(S.el("h2", null, "Starting stacks to issue"));
    waiting.forEach((x) => panel.appendChild(line(x)));
    panel.appendChild(S.el("p", "muted", "The reader issues each stack once it reads exactly the stack."));
  }

  S.extend("dealer", { init, render });
})();
