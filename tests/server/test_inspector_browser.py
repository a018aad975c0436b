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
