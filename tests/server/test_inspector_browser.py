"""The inspector page in headless Chromium: what a person sees, read from the rendered DOM."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proxy_helpers import KEY_A, KEY_B, ROOT, Proxy

from copage.memory import PagedMemory

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--window-size=1400,1000")


@pytest.fixture
def browser() -> Iterator[Any]:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium")
    if missing:
        if os.environ.get("COPAGE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"COPAGE_REQUIRE_BROWSER=1 but missing: {missing}")
        pytest.skip(f"missing: {missing}")
    profile = tempfile.mkdtemp(prefix="copage-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(f)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _login(driver: Any, proxy: Proxy, key: str, cid: str | None = None) -> None:
    from selenium.webdriver.common.by import By

    driver.get(proxy.url + "/ui" + (f"?c={cid}" if cid else ""))
    driver.execute_script("sessionStorage.clear()")
    driver.get(proxy.url + "/ui" + (f"?c={cid}" if cid else ""))
    driver.find_element(By.ID, "key").send_keys(key)
    driver.find_element(By.ID, "login-button").click()


@pytest.mark.browser
def test_inspector_shows_pages_bookmarks_and_recalls(make_proxy: Any, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    proxy = make_proxy(store="sqlite")
    c = proxy.client(default_headers={"X-Copage-Conversation": "trip-planning"})
    for text in ("My sister Marta lives in Lisbon.", "I am allergic to peanuts.",
                 "Budget is 450 dollars.", "Flight on Thursday.", "RECALL p1", "Thanks!"):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    mem = PagedMemory(store=proxy.state.store, conversation_id="trip-planning", tenant="alice")
    books = {pid: b.text for pid, b in mem.bookmarks().items()}
    resident = set(mem.resident)

    _login(browser, proxy, KEY_A, "trip-planning")
    wait = WebDriverWait(browser, 10)
    wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#pages tbody tr")))
    listed = [li.get_attribute("data-id") for li in browser.find_elements(By.CSS_SELECTOR,
                                                                          "#conversations li")]
    assert listed == ["trip-planning"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#pages tbody tr")
    assert [r.get_attribute("data-page") for r in rows] == [p.id for p in mem.pages]
    for row in rows:
        pid = row.get_attribute("data-page")
        state = row.find_element(By.CSS_SELECTOR, "td.state").text
        assert state == ("resident" if pid in resident else "evicted")
        assert row.find_element(By.CSS_SELECTOR, "td.bookmark").text == books[pid]
        colour = row.find_element(By.CSS_SELECTOR, "td.state").value_of_css_property(
            "background-color")
        assert colour == ("rgba(216, 245, 221, 1)" if pid in resident else "rgba(253, 224, 220, 1)")
    p1 = browser.find_element(By.CSS_SELECTOR, 'tr[data-page="p1"]')
    assert int(p1.find_element(By.CSS_SELECTOR, "td.faults").text) == 1
    # the stored prompt-cache meter: every request the proxy sent for this conversation
    metered = mem.stats().prompt_cache
    assert metered is not None and metered["requests"] >= 6
    cache = browser.find_element(By.ID, "conv-cache").text
    assert cache.startswith(f"Prompt cache: {metered['requests']} requests, median "), cache
    assert f"${metered['cost_usd']['gpt-4o-mini']['paged_cached']:.6f}" in cache
    # whether paging has saved money so far, caching priced, per model
    saved = browser.find_element(By.ID, "conv-savings").text
    mini = mem.stats().to_dict()["savings"]["gpt-4o-mini"]
    assert saved.startswith("Paging so far, caching priced: gpt-4o-mini "), saved
    assert (f"(sent ${mini['paged_usd']:.6f}, whole conversation "
            f"${mini['full_usd']:.6f})") in saved
    recalls = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#recalls li")]
    assert len(recalls) == 1 and "p1 paged_in" in recalls[0] and recalls[0].startswith("turn 9")
    events = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#timeline .event")]
    assert "t9 recall p1" in events and "t9 fault p1" in events
    out = ROOT / "artifacts"
    out.mkdir(exist_ok=True)
    browser.save_screenshot(str(out / "inspector.png"))
    assert (out / "inspector.png").stat().st_size > 10_000

    _login(browser, proxy, KEY_B, "trip-planning")
    wait.until(ec.text_to_be_present_in_element((By.ID, "who"), "tenant: bob"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "pick"), "no such conversation"))
    assert browser.find_elements(By.CSS_SELECTOR, "#conversations li") == []
    assert "Lisbon" not in browser.page_source and "[p1:" not in browser.page_source

    _login(browser, proxy, "sk-not-a-key-000000")
    wait.until(ec.text_to_be_present_in_element((By.ID, "login-error"), "invalid"))
    assert Path(out / "inspector.png").exists()


def _shown(driver: Any) -> dict[str, bool]:
    """Which of the page's parts a person sees (rendered, not only present)."""
    from selenium.webdriver.common.by import By

    return {name: driver.find_element(By.ID, name).is_displayed()
            for name in ("login", "main", "logout")}


@pytest.mark.browser
def test_inspector_without_keys_opens_on_the_list(make_proxy: Any, browser: Any) -> None:
    """``copage serve`` with no keys (one local tenant): /ui shows the conversations
    at once; no key box, nothing to press."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    proxy = make_proxy(store="sqlite", keys={})
    c = proxy.client(default_headers={"X-Copage-Conversation": "local-notes"})
    c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
    browser.get(proxy.url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    # What a person sees first, before the list's request is answered: every request
    # takes 800 ms more, so the page is loaded while its API call is still in flight.
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": False, "latency": 800, "downloadThroughput": -1, "uploadThroughput": -1})
    browser.get(proxy.url + "/ui")
    assert browser.execute_script("return performance.getEntriesByType('resource')"
                                  ".filter(e => e.name.includes('/ui/api/')).length") == 0, \
        "the list's request was already answered: this would not be the first look"
    assert not _shown(browser)["login"], "no login box, not even before the list loads"
    browser.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    wait = WebDriverWait(browser, 10)
    wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#conversations li")))
    assert _shown(browser) == {"login": False, "main": True, "logout": False}
    listed = [li.get_attribute("data-id") for li in browser.find_elements(
        By.CSS_SELECTOR, "#conversations li")]
    assert listed == ["local-notes"]
    assert browser.find_element(By.ID, "who").text == "tenant: default"
    assert browser.find_element(By.ID, "login-error").text == ""
    out = ROOT / "artifacts"
    out.mkdir(exist_ok=True)
    browser.save_screenshot(str(out / "inspector-no-keys.png"))
    # a conversation opens from the list
    browser.find_element(By.CSS_SELECTOR, '#conversations li[data-id="local-notes"]').click()
    wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#pages tbody tr")))
    assert not _shown(browser)["login"]


@pytest.mark.browser
def test_inspector_with_keys_shows_only_the_login(make_proxy: Any, browser: Any) -> None:
    """With keys configured, /ui shows the key box and nothing of the main pane (the
    ``hidden`` attribute wins over ``main { display: grid }``), without an error."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    proxy = make_proxy(store="sqlite")
    browser.get(proxy.url + "/ui")
    browser.execute_script("sessionStorage.clear()")
    browser.get(proxy.url + "/ui")
    wait = WebDriverWait(browser, 10)
    wait.until(ec.visibility_of_element_located((By.ID, "login")))
    assert _shown(browser) == {"login": True, "main": False, "logout": False}
    assert browser.find_element(By.ID, "login-error").text == ""
    assert not browser.find_element(By.ID, "conversations").is_displayed()
    out = ROOT / "artifacts"
    out.mkdir(exist_ok=True)
    browser.save_screenshot(str(out / "inspector-login.png"))
    # after the key: only the main pane; after logging out: only the login again
    browser.find_element(By.ID, "key").send_keys(KEY_A)
    browser.find_element(By.ID, "login-button").click()
    wait.until(ec.visibility_of_element_located((By.ID, "main")))
    assert _shown(browser) == {"login": False, "main": True, "logout": True}
    browser.find_element(By.ID, "logout").click()
    wait.until(ec.visibility_of_element_located((By.ID, "login")))
    assert _shown(browser) == {"login": True, "main": False, "logout": False}
    assert browser.find_element(By.ID, "login-error").text == ""


@pytest.mark.browser
def test_inspector_timeline_names_the_pages_the_fill_showed(make_proxy: Any,
                                                            browser: Any) -> None:
    """In the default recall mode each turn records a ``speculative`` event naming the
    best-matching evicted page, also when its score was below the threshold and nothing
    was shown. The timeline labels each one with the pages the fill showed ("none
    shown" when none), not with the best page alone (it read as a page shown)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    proxy = make_proxy(store="sqlite", recall_mode="speculative")
    c = proxy.client(default_headers={"X-Copage-Conversation": "fills"})
    for text in ("My sister Marta lives in Lisbon near the river.",
                 "Marta works at the Lisbon aquarium with penguins.",
                 "I am allergic to peanuts and cashews.", "Budget is 450 dollars.",
                 "Flight on Thursday at noon.", "Where does Marta live in Lisbon?",
                 # a statement matching one word weakly: its best page is named, none shown
                 "The river looked calm and grey under a windy autumn sky today.",
                 "Peanuts or pretzels or chips or crackers or popcorn for the party tonight?"):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    spec = [e for e in proxy.state.store.events("fills", tenant="alice")
            if e.kind == "speculative"]
    expected = [f"t{e.turn_seq + 1} speculative {', '.join(e.detail['paged_in'])}"
                if e.detail["paged_in"] else f"t{e.turn_seq + 1} speculative: none shown"
                for e in spec]
    assert any(e.detail["paged_in"] for e in spec), "a turn showed pages"
    assert any(not e.detail["paged_in"] for e in spec), "a turn showed none"

    _login(browser, proxy, KEY_A, "fills")
    WebDriverWait(browser, 10).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "#timeline .event")))
    shown = [e.text for e in browser.find_elements(By.CSS_SELECTOR,
                                                   "#timeline .event.speculative")]
    assert shown == expected
