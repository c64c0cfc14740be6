// The play page: shows the game's view (the server's JSON), sends the person's moves, and
// asks for the agents' moves one at a time while the status is "waiting".
(function () {
  "use strict";
  var view = JSON.parse(document.getElementById("initial-view").textContent);
  var base = "/api/game/" + encodeURIComponent(view.game);
  var $ = function (id) { return document.getElementById(id); };
  var timer = null;
  var busy = false;

  function render(next) {
    view = next;
    $("board").innerHTML = view.svg;  // made by the server: escaped text, no script
    $("board").setAttribute("data-ply", String(view.ply));
    $("status").setAttribute("data-status", view.status);
    $("status").textContent = view.status_words;
    $("describe").textContent = view.describe;
    var moves = $("moves");
    moves.replaceChildren();
    view.legal.forEach(function (move, i) {
      var button = document.createElement("button");
      button.type = "button";
      button.setAttribute("data-action", String(move.action));
      button.innerHTML = move.svg;
      var words = document.createElement("span");
      words.textContent = (i < 9 ? (i + 1) + ") " : "") + move.words;
      button.appendChild(words);
      button.addEventListener("click", function () { play(move.action); });
      moves.appendChild(button);
    });
    $("hint").disabled = view.status !== "your-turn";
    $("continue").hidden = !view.between_hands;
    var log = $("log");
    log.replaceChildren();
    view.log.forEach(function (entry) {
      var item = document.createElement("li");
      item.className = entry.kind;
      item.textContent = entry.text;
      log.appendChild(item);
    });
    var side = log.closest(".side");
    side.scrollTop = side.scrollHeight;  // the newest move in sight, the page left where it is
    $("record").textContent = view.record ? "Saved as " + view.record + " in the record folder." : "";
    clearTimeout(timer);
    if (view.status === "waiting") { timer = setTimeout(advance, view.wait_ms); }
  }

  function post(kind, body) {
    busy = true;
    return fetch(base + "/" + kind, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().then(function (data) {
        busy = false;
        if (!response.ok) {
          var error = new Error(data.error || ("HTTP " + response.status));
          error.status = response.status;
          throw error;
        }
        return data;
      });
    }, function (error) { busy = false; throw error; });
  }

  function say(text) { $("message").textContent = text; }

  function failed(error) {
    say(error.message);
    if (error.status === 409) {  // the page is behind the game: show the game as it is
      fetch(base).then(function (r) { return r.json(); }).then(render);
    }
  }

  function play(action) {
    if (busy || view.status !== "your-turn") { return; }
    say("");
    post("move", { action: action, ply: view.ply }).then(render, failed);
  }

  function advance() {
    if (busy) { timer = setTimeout(advance, 50); return; }
    post("advance", { ply: view.ply }).then(render, failed);
  }

  $("hint").addEventListener("click", function () {
    if (busy || view.status !== "your-turn") { return; }
    post("hint", { ply: view.ply }).then(function (hint) {
      say(hint.words);
      document.querySelectorAll("#moves button").forEach(function (b) {
        b.classList.toggle("hinted", b.getAttribute("data-action") === String(hint.action));
      });
    }, failed);
  });
  $("continue").addEventListener("click", function () {
    if (view.between_hands) { clearTimeout(timer); advance(); }
  });
  document.addEventListener("keydown", function (event) {
    var number = Number(event.key);
    if (!(number >= 1 && number <= 9) || event.altKey || event.ctrlKey || event.metaKey) { return; }
    var move = view.legal[number - 1];
    if (move) { event.preventDefault(); play(move.action); }
  });
  render(view);
})();
