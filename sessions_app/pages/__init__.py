"""The HTML pages, one module per capability: the lists, a session, its transcript, search,
usage, compare, runs, images, the importer's progress, exports and the error pages; the
write actions behind them (`actions`); how many heavy requests run at once (`heavy`). Thin: an
access helper, a selector or a service, render."""
