// The replay page: one <template data-position="N"> per position; the board shows one of
// them and carries data-ply="N". Buttons (data-control), arrow keys, Home/End and the move
// list (data-goto) choose the position.
(function () {
  "use strict";
  var positions = document.querySelectorAll("template[data-position]");
  var board = document.getElementById("board");
  var caption = document.getElementById("caption");
  var counter = document.getElementById("counter");
  var last = positions.length - 1;
  var current = -1;

  // Scroll the move list (not the page) so that the current move is in sight.
  function reveal(element) {
    var list = element.closest(".side");
    var top = element.offsetTop;
    if (top < list.scrollTop || top + element.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = top - list.clientHeight / 2;
    }
  }

  function show(index) {
    var i = Math.max(0, Math.min(last, index));
    if (i === current) { return; }
    current = i;
    board.replaceChildren(positions[i].content.cloneNode(true));
    board.setAttribute("data-ply", String(i));
    caption.textContent = positions[i].getAttribute("data-caption");
    counter.textContent = "position " + (i + 1) + " of " + positions.length;
    document.querySelectorAll("[data-goto]").forEach(function (b) {
      if (Number(b.getAttribute("data-goto")) === i) {
        b.setAttribute("aria-current", "step");
        reveal(b);
      } else {
        b.removeAttribute("aria-current");
      }
    });
    document.querySelectorAll("[data-control]").forEach(function (b) {
      var kind = b.getAttribute("data-control");
      b.disabled = (kind === "first" || kind === "prev") ? i === 0 : i === last;
    });
  }

  var steps = {
    first: function () { return 0; },
    prev: function () { return current - 1; },
    next: function () { return current + 1; },
    last: function () { return last; }
  };
  document.querySelectorAll("[data-control]").forEach(function (b) {
    b.addEventListener("click", function () { show(steps[b.getAttribute("data-control")]()); });
  });
  document.querySelectorAll("[data-goto]").forEach(function (b) {
    b.addEventListener("click", function () { show(Number(b.getAttribute("data-goto"))); });
  });
  var keys = { ArrowLeft: "prev", ArrowRight: "next", Home: "first", End: "last" };
  document.addEventListener("keydown", function (event) {
    var kind = keys[event.key];
    if (!kind || event.altKey || event.ctrlKey || event.metaKey) { return; }
    event.preventDefault();
    show(steps[kind]());
  });
  show(0);
})();
