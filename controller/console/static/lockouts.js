/* The dealer's screen (after dealer.js): sign-in back-off on the screen, and a manager lifting a lock.
   Registered with Showdown.extend("dealer", {init, render}).

   The screen document of a signed-in person carries `lockouts` (staff_id, terminal, failures,
   wait_until): each terminal that must wait before the next sign-in for an id (D344). They are
   listed for staff; a manager gets "Lift a lock" (a dialog with the reason), which sends
   `unlock_staff` and shows the table's answer as it is (D345). */
"use strict";

(function () {
  const S = window.Showdown;
  const { $, el, clear } = S;

  function utc(iso) {
    if (!iso) return null;
    const d = new Date(iso);
    if (isNaN(d.getTime())) return null;
    const two = (n) => String(n).padStart(2, "0");
    return two(d.getUTCHours()) + ":" + two(d.getUTCMinutes()) + ":" + two(d.getUTCSeconds()) + " UTC";
  }

  function who(x) { return x.staff_id || "unknown ids and cards"; }

  function line(x) {
    const until = utc(x.wait_until);
    return who(x) + " at " + (x.terminal || "(no terminal recorded)") + " · " + x.failures +
      " failed · " + (until ? "waits until " + until : "no wait now");
  }

  function current() {
    const v = S.state.view;
    return (v && Array.isArray(v.lockouts)) ? v.lockouts : [];
  }

  async function lift() {
    const locks = current();
    if (!locks.length) { S.banner("no sign-in is locked at this table", "bad"); return; }
    const got = await S.ask("Lift a lock",
      "A manager's action: the terminal may try a sign-in for that id again at once. Say why.", [
        { name: "which", label: "Lock", type: "select", options: locks.map((x, i) => [String(i), line(x)]) },
        { name: "reason", label: "Reason" },
      ]);
    if (!got) return;
    const chosen = locks[Number(got.which)];
    if (!chosen) { S.banner("choose the lock to lift", "bad"); return; }
    await S.act("unlock_staff", { staff_id: chosen.staff_id, terminal: chosen.terminal, reason: got.reason },
      "lock lifted: " + who(chosen) + " at " + chosen.terminal);
  }

  function init() {
    const panel = el("div", "lockouts hidden");
    panel.id = "lockouts";
    panel.appendChild(el("h2", null, "Sign-in waits"));
    panel.appendChild(el("ul", "lockout-list"));
    // the manager's button goes with the waits it lifts, not in the step's own pad
    const button = el("button", "button super manager hidden", "Lift a lock");
    button.type = "button";
    button.id = "lift-lock";
    button.addEventListener("click", lift);
    panel.appendChild(button);
    const staff = $("staff");
    const home = (staff && staff.parentNode) || $("actions");
    if (home) home.appendChild(panel);
  }

  function render() {
    const me = S.state.me;
    const locks = current();
    const button = $("lift-lock");
    if (button) button.classList.toggle("hidden", !(me && me.role === "manager"));
    const panel = $("lockouts");
    if (!panel) return;
    panel.classList.toggle("hidden", !(me && locks.length));
    const list = panel.querySelector(".lockout-list");
    clear(list);
    locks.forEach((x) => {
      const item = el("li", "lockout", line(x));
      item.dataset.staffId = x.staff_id || "";
      item.dataset.terminal = x.terminal;
      list.appendChild(item);
    });
  }

  S.extend("dealer", { init: init, render: render });
})();
