"""The pages in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium. Whole games played by clicking the page (2 players,
and partnership with a hint and the number keys), two tabs playing two games, a replay page
walked from ``file://`` with the arrow keys, Home/End, the buttons and the move list; the
console free of errors and nothing loaded from the network.

These tests skip, saying what is missing, where the browser, its driver, Selenium or uvicorn
is not installed; with ``BLOCK_ENV_REQUIRE_BROWSER=1`` (``.ci/extra-browser``) they fail
instead. With ``BLOCK_ENV_SCREENSHOTS=DIR`` they also save the docs' screenshots there.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from block_env import records, replay
from block_env.web.replay_page import write_html

REQUIRED = os.environ.get("BLOCK_ENV_REQUIRE_BROWSER") == "1"
SHOTS = os.environ.get("BLOCK_ENV_SCREENSHOTS")
BROWSERS = ("chromium", "chromium-browser")


def missing() -> str | None:
    """What is missing to run these tests (None: nothing)."""
    if not any(shutil.which(b) for b in BROWSERS) or not shutil.which("chromedriver"):
        return (
            "chromium or chromedriver is not installed (apt-get install chromium chromium-driver)"
        )
    for module in ("selenium", "uvicorn", "starlette"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[browser]')"
    return None


def require_browser() -> None:
    reason = missing()
    if reason is not None:
        if REQUIRED:
            pytest.fail(f"BLOCK_ENV_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument("--window-size=1200,900")
    options.binary_location = next(shutil.which(b) for b in BROWSERS if shutil.which(b))
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    browser.set_page_load_timeout(30)
    yield browser
    browser.quit()


class LiveServer:
    """The play server's application served by uvicorn in a thread, on a free port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def serve(tmp_path: Path, **options: Any) -> tuple[LiveServer, Any]:
    from block_env.web.server import create_app
    from block_env.web.session import GameOptions

    app = create_app(GameOptions(record_dir=tmp_path, **options), allowed_hosts=["127.0.0.1"])
    return LiveServer(app), app.state.games


def console_errors(browser: Any) -> list[dict]:
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def wait_for(browser: Any, condition: Any, timeout: float = 20) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, poll_frequency=0.02).until(condition)


def status_of(browser: Any) -> str:
    return browser.find_element("id", "status").get_attribute("data-status")


def screenshot(browser: Any, name: str) -> None:
    """Save the page as docs/NAME (palette PNG, small) when BLOCK_ENV_SCREENSHOTS is set."""
    if not SHOTS:
        return
    path = Path(SHOTS) / name
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(path))
    try:
        from PIL import Image
    except ImportError:
        return
    Image.open(path).convert("RGB").quantize(256, method=2).save(path, optimize=True)  # octree


WATCH_PLIES = """
window.blockPlies = [document.getElementById('board').getAttribute('data-ply')];
new MutationObserver(function () {
  window.blockPlies.push(document.getElementById('board').getAttribute('data-ply'));
}).observe(document.getElementById('board'), {attributes: true, attributeFilter: ['data-ply']});
"""


def play_through(browser: Any, games: Any, seed: int, keys_and_hint: bool = False) -> dict:
    """Play the game open in ``browser`` to its end by clicking (or pressing the number of)
    a random legal move; checks each turn's buttons against the game's legal moves. Returns
    counts of what happened."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    rng = np.random.default_rng(seed)
    game_id = browser.current_url.rsplit("/", 1)[1]
    session = games.get(game_id)
    browser.execute_script(WATCH_PLIES)
    counts = {"clicks": 0, "keys": 0, "passes": 0, "hints": 0}
    while True:
        wait_for(browser, lambda b: status_of(b) in ("your-turn", "over"), 60)
        if status_of(browser) == "over":
            break
        ply = int(browser.find_element("id", "board").get_attribute("data-ply"))
        buttons = browser.find_elements(By.CSS_SELECTOR, "#moves button[data-action]")
        actions = [int(b.get_attribute("data-action")) for b in buttons]
        with session.lock:
            assert session.ply == ply and actions == session.legal_actions()
        if actions == [session.raw.config.tiles.pass_action]:
            assert "pass" in buttons[0].text
            counts["passes"] += 1
        if keys_and_hint and counts["hints"] == 0 and len(actions) > 1:
            browser.find_element("id", "hint").click()
            wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#moves .hinted"))
            assert browser.find_element("id", "message").text.startswith("Hint (rules): ")
            counts["hints"] += 1
        if counts["clicks"] == 2:
            screenshot(browser, "play_web.png")
        if keys_and_hint and counts["keys"] < 3 and len(actions) <= 9:
            choice = int(rng.integers(len(actions)))
            ActionChains(browser).send_keys(str(choice + 1)).perform()
            counts["keys"] += 1
        else:
            buttons[int(rng.integers(len(buttons)))].click()
            counts["clicks"] += 1
        wait_for(
            browser,
            lambda b, before=ply: (
                int(b.find_element("id", "board").get_attribute("data-ply")) > before
            ),
        )
    plies = [int(p) for p in browser.execute_script("return window.blockPlies")]
    assert plies == list(range(plies[0], plies[-1] + 1))  # every step shown, one at a time
    counts["plies"] = plies[-1]
    return counts


@pytest.mark.parametrize(
    "config, seat",
    [
        ({"num_players": 2, "target_score": 30}, 0),
        ({"num_players": 4, "partnership": True, "target_score": 30}, 1),
    ],
    ids=["2p", "partnership"],
)
def test_whole_game_in_the_page(driver: Any, tmp_path: Path, config: dict, seat: int) -> None:
    partnership = config.get("partnership", False)
    live, games = serve(tmp_path, config=config, human=seat, seed=4, delay_ms=10)
    try:
        driver.get(live.url + "/")
        assert "/game/" in driver.current_url
        counts = play_through(driver, games, seed=seat, keys_and_hint=partnership)
        words = driver.find_element("id", "status").text
        assert words.startswith("Game over")
        saved = list(tmp_path.iterdir())
        assert len(saved) == 1 and saved[0].name in driver.find_element("id", "record").text
        record = records.load(saved[0])
        human = sum(m["seat"] == seat for h in record["hands"] for m in h["moves"])
        assert human == counts["clicks"] + counts["keys"] > 0
        assert (
            sum(len(h["moves"]) for h in record["hands"]) + len(record["hands"]) - 1
            == (counts["plies"])
        )
        assert replay.main([str(saved[0]), "--check"]) == 0
        if partnership:
            assert counts["hints"] == 1 and counts["keys"] > 0
        assert console_errors(driver) == []
    finally:
        live.stop()


def test_two_tabs_play_two_games(driver: Any, tmp_path: Path) -> None:
    live, games = serve(tmp_path, config={"num_players": 2}, seed=1, delay_ms=10)
    try:
        driver.get(live.url + "/")
        first = driver.current_url
        driver.switch_to.new_window("tab")
        driver.get(live.url + "/")
        second = driver.current_url
        assert first != second and len(games.games) == 2
        wait_for(driver, lambda b: status_of(b) == "your-turn")
        driver.find_element("css selector", "#moves button[data-action]").click()
        wait_for(driver, lambda b: status_of(b) == "your-turn")
        moved = games.get(second.rsplit("/", 1)[1])
        still = games.get(first.rsplit("/", 1)[1])
        assert moved.ply >= 1 and moved.ply > still.ply
        assert all(m["seat"] != 0 for h in still.env.record["hands"] for m in h["moves"])
        driver.close()
        driver.switch_to.window(driver.window_handles[0])
        assert console_errors(driver) == []
    finally:
        live.stop()


def test_replay_page_from_file(driver: Any, tmp_path: Path, match_record: dict) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    page = tmp_path / "game.html"
    count = write_html(match_record, page)
    driver.get(page.as_uri())

    def ply() -> int:
        return int(driver.find_element("id", "board").get_attribute("data-ply"))

    def press(key: str) -> None:
        ActionChains(driver).send_keys(key).perform()

    def control(name: str) -> Any:
        return driver.find_element(By.CSS_SELECTOR, f"[data-control='{name}']")

    assert ply() == 0 and not control("first").is_enabled() and not control("prev").is_enabled()
    assert driver.find_elements(By.CSS_SELECTOR, "#board svg .tile")
    for _ in range(3):
        press(Keys.ARROW_RIGHT)
    assert ply() == 3
    control("next").click()
    assert ply() == 4
    control("prev").click()
    press(Keys.ARROW_LEFT)
    assert ply() == 2
    caption = driver.find_element("id", "caption").text
    assert caption.startswith("Hand 1, move 2: ")
    press(Keys.END)
    assert ply() == count - 1 and not control("next").is_enabled()
    press(Keys.ARROW_RIGHT)
    assert ply() == count - 1
    press(Keys.HOME)
    assert ply() == 0
    control("last").click()
    assert ply() == count - 1
    control("first").click()
    assert ply() == 0
    entry = driver.find_elements(By.CSS_SELECTOR, "[data-goto]")[count // 2]
    entry.click()
    assert ply() == count // 2 == int(entry.get_attribute("data-goto"))
    assert entry.get_attribute("aria-current") == "step"
    tiles = driver.find_elements(By.CSS_SELECTOR, "#board svg g.line-tile")
    assert tiles and tiles[0].is_displayed()
    screenshot(driver, "replay_page.png")
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert console_errors(driver) == []
