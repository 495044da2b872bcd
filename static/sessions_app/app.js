// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy], button[data-copy-from]");
    if (!button) return;
    const source = button.getAttribute("data-copy-from");
    const text = source ? document.getElementById(source).value : button.getAttribute("data-copy");
    const done = function () {
      const label = button.textContent;
      button.textContent = "Copied";
      button.classList.add("copied");
      setTimeout(function () { button.textContent = label; button.classList.remove("copied"); }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text); done(); });
    } else {
      fallback(text);
      done();
    }
  });
  function fallback(text) {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing more to try */ }
    area.remove();
  }
})();

// Live transcript: the tail of a page that shows a session's end is replaced as the
// session grows (#live-tail polls). The reader keeps their place, what they opened
// stays open, and a hint says when a new turn arrived below them.
(function () {
  "use strict";
  let saved = null;
  function nearBottom() {
    const doc = document.documentElement;
    return window.innerHeight + window.scrollY >= doc.scrollHeight - 48;
  }
  function turnCount() {
    return document.querySelectorAll("#turns article.turn").length;
  }
  document.addEventListener("htmx:afterSwap", function (event) {
    const target = event.detail.target;
    if (target && target.id && target.id.indexOf("record-output-") === 0) {
      target.setAttribute("data-expanded", "1"); // "Show all": kept across live updates
    }
  });
  // A page action in flight (a POST: rewind, fork, undo ...): the tail does not poll
  // meanwhile. The action may change the session before it answers, and the reload a poll
  // would then ask for (the session got shorter) would take the page away from the
  // action's answer and its message.
  let acting = 0;
  function isAction(event) {
    const config = event.detail.requestConfig;
    return Boolean(config && config.verb && config.verb !== "get");
  }
  document.addEventListener("submit", function (event) {
    if (!event.defaultPrevented && (event.target.method || "").toLowerCase() === "post") acting += 1;
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (isAction(event)) { acting += 1; return; }
    // A hidden tab does not poll (a trigger filter would need eval, which the CSP forbids).
    if (event.detail.elt.id === "live-tail" && (document.hidden || acting > 0)) event.preventDefault();
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (isAction(event)) acting = Math.max(0, acting - 1);
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    const tail = event.detail.target;
    if (!tail || tail.id !== "live-tail" || !event.detail.shouldSwap) return;
    saved = {
      atBottom: nearBottom(),
      scrollY: window.scrollY,
      turns: turnCount(),
      open: Array.from(tail.querySelectorAll("details[open][id]"), function (d) { return d.id; }),
      expanded: Array.from(tail.querySelectorAll("[data-expanded][id]"), function (el) {
        return [el.id, el.innerHTML];
      }),
    };
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!saved) return;
    const state = saved;
    saved = null;
    state.expanded.forEach(function (pair) {
      const el = document.getElementById(pair[0]);
      if (el) { el.innerHTML = pair[1]; el.setAttribute("data-expanded", "1"); htmx.process(el); }
    });
    state.open.forEach(function (id) {
      const el = document.getElementById(id);
      if (el && el.tagName === "DETAILS") el.open = true;
    });
    const added = turnCount() - state.turns;
    if (state.atBottom) {
      window.scrollTo(0, document.documentElement.scrollHeight);
    } else {
      window.scrollTo(0, state.scrollY);
      if (added > 0) showHint(added);
    }
  });
  function showHint(added) {
    let hint = document.getElementById("new-turn-hint");
    if (!hint) {
      hint = document.createElement("button");
      hint.type = "button";
      hint.id = "new-turn-hint";
      hint.className = "new-turn-hint";
      hint.addEventListener("click", function () {
        const turns = document.querySelectorAll("#turns article.turn");
        const first = turns[turns.length - Number(hint.getAttribute("data-added"))];
        (first || turns[turns.length - 1]).scrollIntoView({ block: "start" });
        hint.remove();
      });
      document.body.appendChild(hint);
    }
    const total = added + Number(hint.getAttribute("data-added") || 0);
    hint.setAttribute("data-added", String(total));
    hint.textContent = total === 1 ? "New turn below ↓" : total + " new turns below ↓";
  }
  window.addEventListener("scroll", function () {
    const hint = document.getElementById("new-turn-hint");
    if (hint && nearBottom()) hint.remove();
  }, { passive: true });
})();

// "Branch from here", then type: the new session opens at its prompt box.
window.addEventListener("load", function () {
  "use strict";
  if (window.location.hash === "#run") {
    const box = document.getElementById("run-prompt");
    if (box) box.focus();
  }
});

// Search: "/" or Ctrl/Cmd+K focuses the search box; a page opened from a result
// (?hl=words) marks the words in the turn it was opened at.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  document.addEventListener("keydown", function (event) {
    const box = document.getElementById("search-query") || document.getElementById("search-box");
    if (!box) return;
    const k = (event.key === "k" || event.key === "K") && (event.ctrlKey || event.metaKey);
    if (k || (event.key === "/" && !event.ctrlKey && !event.metaKey && !event.altKey && !typing(document.activeElement))) {
      event.preventDefault();
      box.focus();
      box.select();
    }
  });
  function terms(query) {
    const found = [];
    const re = /"([^"]*)"|(\S+)/g;
    let m;
    while ((m = re.exec(query)) !== null) {
      const term = (m[1] !== undefined ? m[1] : m[2]).split(/\s+/).filter(Boolean).join(" ");
      if (term.length >= 3) found.push(term.toLowerCase());
    }
    return found;
  }
  function mark(root, words) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const hits = [];
    let node;
    while ((node = walker.nextNode())) {
      if (node.parentElement.closest("mark.search-hit, script, style, textarea")) continue;
      const lower = node.data.toLowerCase();
      if (words.some(function (w) { return lower.indexOf(w) >= 0; })) hits.push(node);
    }
    let first = null;
    hits.forEach(function (text) {
      let rest = text;
      for (;;) {
        const lower = rest.data.toLowerCase();
        let at = -1, len = 0;
        words.forEach(function (w) {
          const i = lower.indexOf(w);
          if (i >= 0 && (at < 0 || i < at)) { at = i; len = w.length; }
        });
        if (at < 0) break;
        const match = rest.splitText(at);
        rest = match.splitText(len);
        const el = document.createElement("mark");
        el.className = "search-hit";
        match.parentNode.replaceChild(el, match);
        el.appendChild(match);
        // A match inside a closed <details> is opened so it can be seen.
        for (let d = el.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
        if (!first) first = el;
      }
    });
    return first;
  }
  function highlight() {
    const q = new URLSearchParams(window.location.search).get("hl");
    if (!q) return;
    const words = terms(q);
    if (!words.length) return;
    const target = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null;
    const first = mark(target || document.getElementById("turns") || document.body, words);
    if (first) {
      first.classList.add("current");
      first.scrollIntoView({ block: "center" });
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", highlight);
  else highlight();
  // The rest of a long turn, loaded on scroll, is marked as it arrives (not scrolled to).
  document.addEventListener("htmx:load", function (event) {
    const q = new URLSearchParams(window.location.search).get("hl");
    const elt = event.detail.elt;
    if (!q || !elt.closest || !elt.closest("#turns")) return;
    const words = terms(q);
    if (words.length) mark(elt, words);
  });
})();

// Theme toggle: follow the system, dark, light; remembered in this browser.
(function () {
  "use strict";
  const ORDER = ["system", "dark", "light"];
  function current() {
    return document.documentElement.getAttribute("data-theme") || "system";
  }
  function show(button) {
    button.textContent = "Theme: " + current();
  }
  document.addEventListener("click", function (event) {
    const button = event.target.closest("#theme-toggle");
    if (!button) return;
    const next = ORDER[(ORDER.indexOf(current()) + 1) % ORDER.length];
    if (next === "system") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.setAttribute("data-theme", next);
    try {
      if (next === "system") window.localStorage.removeItem("branchboard-theme");
      else window.localStorage.setItem("branchboard-theme", next);
    } catch (e) { /* storage blocked: this page only */ }
    show(button);
  });
  function ready() {
    const button = document.getElementById("theme-toggle");
    if (button) { button.hidden = false; show(button); }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();

// Keys on the transcript: j/k next/previous turn, o or Enter open (or close) its tool
// calls and thinking, b branch from it; on every page, / search and ? this list.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(el.tagName));
  }
  function turns() {
    return Array.prototype.slice.call(document.querySelectorAll("#turns article.turn"));
  }
  function focused() {
    return document.querySelector("#turns article.turn.focused");
  }
  function focusTurn(turn) {
    const old = focused();
    if (old) old.classList.remove("focused");
    turn.classList.add("focused");
    turn.setAttribute("tabindex", "-1");
    turn.focus({ preventScroll: true });
    turn.scrollIntoView({ block: "start" });
  }
  function move(step) {
    const all = turns();
    if (!all.length) return;
    const at = all.indexOf(focused());
    let next;
    if (at < 0) {
      // From where the reader is: the first turn whose top is below the window's top.
      next = all.find(function (t) { return t.getBoundingClientRect().top > 1; }) || all[all.length - 1];
      if (step < 0) next = all[Math.max(0, all.indexOf(next) - 1)];
    } else {
      if (step > 0 && at === all.length - 1 && more(all[at])) return;
      next = all[Math.min(all.length - 1, Math.max(0, at + step))];
    }
    focusTurn(next);
  }
  // Past the last loaded turn: the next chunk is loaded (by scrolling its "more" link into
  // view, which loads it as scrolling does, so it is never asked for twice), then its
  // first turn focused. False when every turn is loaded.
  function more(last) {
    const link = document.querySelector("#turns > .more[hx-get]");
    if (!link) return false;
    document.body.addEventListener("htmx:afterRequest", function loaded(event) {
      // The link is swapped out by then: the event reaches the page from its old parent.
      const config = event.detail.requestConfig;
      if (!config || config.elt !== link) return;
      document.body.removeEventListener("htmx:afterRequest", loaded);
      const all = turns();
      const at = all.indexOf(last);
      if (at >= 0 && at + 1 < all.length) focusTurn(all[at + 1]);
    });
    link.scrollIntoView({ block: "end" });
    return true;
  }
  // Closing the list of keys gives the focus back to the focused turn, so the next key
  // acts on it (not on the list's Close button, which would take it for typing).
  document.addEventListener("close", function (event) {
    if (event.target.id !== "keys-help") return;
    const turn = focused();
    if (turn) turn.focus({ preventScroll: true });
  }, true);
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const help = document.getElementById("keys-help");
    if (event.key === "?") {
      if (help && !help.open) help.showModal();
      else if (help) help.close();
      event.preventDefault();
      return;
    }
    if (!document.getElementById("turns")) return;
    const turn = focused();
    if (event.key === "j") { move(1); event.preventDefault(); }
    else if (event.key === "k") { move(-1); event.preventDefault(); }
    else if (turn && (event.key === "o" || (event.key === "Enter" && event.target === turn))) {
      const details = turn.querySelectorAll("details");
      const open = Array.prototype.some.call(details, function (d) { return !d.open; });
      details.forEach(function (d) { d.open = open; });
      event.preventDefault();
    } else if (event.key === "b" && turn) {
      const button = turn.querySelector("button.branch-here");
      if (button) { button.click(); event.preventDefault(); }
    }
  });
})();

// A refusal never takes what the user typed: an answer that is not the run panel (a page
// too large, a missing token, a server error) is not swapped over the prompt box; its
// message is shown in the form instead. A 5xx into an action slot says so too.
(function () {
  "use strict";
  function said(html, status) {
    const doc = new DOMParser().parseFromString(html || "", "text/html");
    const p = doc.querySelector(".action-error");
    const text = (p ? p.textContent : doc.body.textContent || "").replace(/\s+/g, " ").trim();
    return text.slice(0, 500) || "The server answered " + status + "; nothing was sent.";
  }
  document.addEventListener("htmx:beforeSwap", function (event) {
    const d = event.detail;
    const status = d.xhr ? d.xhr.status : 0;
    const target = d.target;
    if (status < 400 || !target) return;
    if (target.id === "run-panel" && (d.serverResponse || "").indexOf('id="run-panel"') < 0) {
      d.shouldSwap = false;
      let slot = target.querySelector("#run-refusal");
      if (!slot) {
        slot = document.createElement("p");
        slot.id = "run-refusal";
        slot.className = "action-error";
        slot.setAttribute("role", "alert");
        target.prepend(slot);
      }
      slot.textContent = said(d.serverResponse, status);
      slot.hidden = false;
    } else if (status >= 500 && target.classList.contains("action-slot")) {
      target.textContent = "";
      const p = document.createElement("p");
      p.className = "action-error";
      p.setAttribute("role", "alert");
      p.textContent = said(d.serverResponse, status);
      target.appendChild(p);
    }
  });
  // A new attempt clears the last refusal.
  document.addEventListener("htmx:beforeRequest", function (event) {
    const slot = event.detail.elt.querySelector && event.detail.elt.querySelector("#run-refusal");
    if (slot && event.detail.elt.id === "run-form") { slot.hidden = true; slot.textContent = ""; }
  });
})();
