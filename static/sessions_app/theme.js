// Loaded before the page is drawn (not deferred): the theme chosen with the toggle
// ("dark" or "light"; none: follow the system) is applied before the first paint.
(function () {
  "use strict";
  try {
    const theme = window.localStorage.getItem("branchboard-theme");
    if (theme === "dark" || theme === "light") document.documentElement.setAttribute("data-theme", theme);
  } catch (e) { /* storage blocked: follow the system */ }
})();
