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
