"""Block in the browser: a self-contained replay page and a local play server.

* ``replay_page.replay_html(record, viewer)`` is one HTML page holding every position of a
  game record as inline SVG (``block-env replay REC --html OUT``); it loads nothing.
* ``session.PlaySession`` is one game at the table of the play server: the env, the agents,
  the person's seat, and the checks on every request.
* ``server.create_app(options)`` is the Starlette application of ``block-env play --web``
  (the ``web`` extra: starlette and uvicorn).
"""
