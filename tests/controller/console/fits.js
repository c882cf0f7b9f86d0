/* The check behind tests/controller/console/screens.py `fits`: run in the page with
   [selectors, minTap, minText]; returns the problems found (see that module's docstring). */
([selectors, minTap, minText]) => {
  const problems = [];
  const vw = window.innerWidth, vh = window.innerHeight;
  const name = (el) => el.id ? "#" + el.id : el.tagName.toLowerCase() +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().replace(/\s+/g, ".") : "") +
    (el.dataset && el.dataset.action ? "[" + el.dataset.action + "]" : "") +
    (el.dataset && el.dataset.key ? "[key " + el.dataset.key + "]" : "");
  const shown = (el) => { const st = getComputedStyle(el);
    return st.display !== "none" && st.visibility !== "hidden" && el.getClientRects().length > 0; };
  if (document.documentElement.scrollWidth > vw + 1)
    problems.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " > " + vw);
  for (const sel of selectors) {
    const found = Array.from(document.querySelectorAll(sel)).filter(shown);
    if (!found.length) { problems.push(sel + ": nothing shown"); continue; }
    for (const el of found) {
      const r = el.getBoundingClientRect();
      const what = sel + " " + name(el);
      if (r.width < 1 || r.height < 1) { problems.push(what + ": empty box"); continue; }
      if (r.left < -0.5 || r.top < -0.5 || r.right > vw + 0.5 || r.bottom > vh + 0.5)
        problems.push(what + ": outside the " + vw + "x" + vh + " viewport at " +
          [r.left, r.top, r.right, r.bottom].map(Math.round).join(","));
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== "inline")
        problems.push(what + ": clipped, " + el.scrollWidth + " wide in " + el.clientWidth);
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        const st = getComputedStyle(a);
        if (/(hidden|auto|scroll|clip)/.test(st.overflow + st.overflowX + st.overflowY)) {
          const ar = a.getBoundingClientRect();
          if (r.top < ar.top - 0.5 || r.bottom > ar.bottom + 0.5 || r.left < ar.left - 0.5 || r.right > ar.right + 0.5)
            problems.push(what + ": cut by " + name(a));
        }
      }
      const taps = el.matches("button, a, .key, input, select") ? [el] : Array.from(el.querySelectorAll("button, a, .key"));
      for (const t of taps.filter(shown)) {
        const tr = t.getBoundingClientRect();
        if (tr.width < minTap - 0.5 || tr.height < minTap - 0.5)
          problems.push(what + " " + name(t) + ": touch target " + Math.round(tr.width) + "x" + Math.round(tr.height));
      }
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.currentNode; n; n = walker.nextNode()) {
        if (n.nodeType !== 3 || !n.textContent.trim() || !n.parentElement || !shown(n.parentElement)) continue;
        const size = parseFloat(getComputedStyle(n.parentElement).fontSize);
        if (size < minText - 0.01) problems.push(what + ": text " + JSON.stringify(n.textContent.trim().slice(0, 20)) + " at " + size + " px");
      }
    }
  }
  const banner = document.getElementById("banner"), phase = document.getElementById("phase");
  if (banner && phase && !banner.classList.contains("hidden")) {
    const b = banner.getBoundingClientRect(), p = phase.getBoundingClientRect();
    if (b.left < p.right && p.left < b.right && b.top < p.bottom && p.top < b.bottom)
      problems.push("the banner covers the phase");
  }
  return Array.from(new Set(problems));
}
