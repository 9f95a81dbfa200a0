#!/usr/bin/env python3
"""Drives Islet's dashboard in headless Chromium (Debian's chromium and
chromium-driver, through selenium) against a running Islet, the way a person would:

  1. signs in with the admin token typed into the password field;
  2. opens the app's page and prints "ready" (the test then starts an activity through
     the API) and waits for the activity to appear there without reloading;
  3. opens the activity's page, waits for its device to hold an update token and for
     the tap the test reports to show on the start push, and ends the activity from
     the page; waits for the end push to be answered;
  4. opens the device's page from the activity's, the app's overview, the lookup,
     the pushes by reason, the delivery charts, the devices and the webhooks pages,
     and fetches a CSV export as the page's link would;
  5. signs out, and checks the browser's console logged nothing at SEVERE.

Each view is audited with axe-core (axe-selenium-python): a serious or critical
violation fails the flow. Each is also laid out at a phone's width (390 px), where
the page must not scroll sideways (a wide table scrolls within its own box).

Prints one line per step and, last, one JSON line: {"ok": true, "steps": [...]}.
With --screenshots DIR it writes a PNG of each page there. Exits 1 on any failure,
with the reason and the browser's log on standard error.

Usage: dashboard_flow.py BASE_URL ADMIN_TOKEN APP_ID ACTIVITY_ID DEVICE_ID [--screenshots DIR]
"""
import json
import os
import shutil
import sys
import time

from axe_selenium_python import Axe
from selenium import webdriver
from selenium.common.exceptions import TimeoutException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

DEADLINE = 60


def browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                     "--disable-gpu", "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--metrics-recording-only"):
        options.add_argument(argument)
    for binary in ("/usr/lib/chromium/chromium", "/usr/bin/chromium"):
        if os.path.exists(binary):
            options.binary_location = binary
            break
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


class Flow:
    def __init__(self, driver, base, screenshots):
        self.driver = driver
        self.base = base.rstrip("/")
        self.screenshots = screenshots
        self.steps = []
        self.logs = []
        self.problems = []
        self.audited = []

    def step(self, name):
        self.steps.append(name)
        print(name, flush=True)

    def wait(self, condition, what, timeout=DEADLINE):
        def check(driver):
            try:
                return condition(driver)
            except StaleElementReferenceException:
                return False
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(check)
        except TimeoutException:
            raise AssertionError("timed out waiting for " + what)

    def element(self, css, what=None, timeout=DEADLINE):
        return self.wait(lambda d: next(iter(d.find_elements(By.CSS_SELECTOR, css)), None), what or css, timeout)

    def click(self, css, what=None, timeout=DEADLINE):
        """Clicks the element `css` finds, found again if a live refresh replaced it
        between the finding and the click."""
        def clicked(driver):
            found = next(iter(driver.find_elements(By.CSS_SELECTOR, css)), None)
            if found is None:
                return False
            found.click()
            return True
        self.wait(clicked, what or css, timeout)

    def page(self, name):
        return self.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-page") == name, "page " + name)

    def audit(self, name):
        """Runs axe-core on the view as it stands, then lays it out at a phone's
        width; records what either finds, for the end of the flow to report."""
        axe = Axe(self.driver)
        axe.inject()
        results = axe.run()
        for violation in results["violations"]:
            if violation.get("impact") in ("serious", "critical"):
                targets = [" ".join(node["target"]) if isinstance(node["target"], list) else str(node["target"])
                           for node in violation["nodes"][:5]]
                self.problems.append("%s: %s (%s): %s" % (name, violation["id"], violation["impact"], ", ".join(targets)))
        self.driver.set_window_size(390, 844)
        try:
            self.wait(lambda d: d.execute_script("return window.innerWidth;") <= 400, "the phone's width")
            overflow = self.driver.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
            if overflow > 1:
                wide = self.driver.execute_script(
                    "const w = document.documentElement.clientWidth;"
                    "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w + 1)"
                    ".slice(0, 3).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className).join(', ');")
                self.problems.append("%s: scrolls sideways by %d px at 390 px wide (%s)" % (name, overflow, wide))
        finally:
            self.driver.set_window_size(1280, 1000)
        self.audited.append(name)

    def shoot(self, name):
        if not self.screenshots:
            return
        os.makedirs(self.screenshots, exist_ok=True)
        time.sleep(0.3)  # let the last render settle: a picture, not a check
        height = self.driver.execute_script("return document.documentElement.scrollHeight;")
        self.driver.set_window_size(1280, max(1000, min(int(height) + 40, 4000)))
        self.driver.execute_script("window.scrollTo(0, 0);")
        time.sleep(0.2)
        self.driver.save_screenshot(os.path.join(self.screenshots, name + ".png"))
        self.driver.set_window_size(1280, 1000)

    def collect_logs(self):
        self.logs.extend(self.driver.get_log("browser"))


def run(arguments):
    screenshots = None
    if "--screenshots" in arguments:
        index = arguments.index("--screenshots")
        screenshots = arguments[index + 1]
        del arguments[index:index + 2]
    base, admin_token, app_id, activity_id, device_id = arguments
    driver = browser()
    flow = Flow(driver, base, screenshots)
    try:
        driver.get(flow.base + "/dashboard")
        flow.page("sign-in")
        field = flow.element("#sign-in-form input[type=password]")
        flow.audit("sign-in")
        field.send_keys(admin_token)
        flow.shoot("sign-in")
        flow.element("#sign-in-button").click()
        flow.page("apps")
        flow.click('#apps-table a[data-app-id="%s"]' % app_id)
        flow.page("app")
        flow.element("#activities tr")
        flow.step("signed-in")
        marker = driver.execute_script("document.body.dataset.marker = 'not reloaded'; return document.body.dataset.marker;")
        print("ready", flush=True)

        flow.element('#activities tr[data-activity-id="%s"]' % activity_id, "the activity to appear on the app page")
        if driver.execute_script("return document.body.dataset.marker;") != marker:
            raise AssertionError("the page reloaded")
        flow.step("activity-appeared")
        flow.audit("app")
        flow.shoot("app")

        flow.click('#activities tr[data-activity-id="%s"] a' % activity_id)
        flow.page("activity")
        flow.element('#devices tr[data-device-id="%s"]' % device_id)
        flow.wait(lambda d: "…" in d.find_element(By.CSS_SELECTOR, '#devices tr[data-device-id="%s"]' % device_id).text,
                  "the device's update token (redacted) on the activity page")
        flow.element('#push-timeline li[data-event="start"][data-status="sent"]', "the start push in the timeline")
        flow.step("activity-page")
        # The test taps the activity on the phone once the start push is delivered.
        flow.element('#push-timeline li[data-event="start"][data-taps="1"] .taps', "the tap counted on the start push")
        flow.step("tapped")
        # The test posts the phone's receipt of the start (its type has receipts on).
        flow.wait(lambda d: d.find_element(By.CSS_SELECTOR, '#devices tr[data-device-id="%s"] td.shown' % device_id).text.startswith("send "),
                  "the send the device showed, on its row")
        flow.element('#push-timeline li[data-event="start"] .received', "the start push marked shown")
        flow.wait(lambda d: d.find_element(By.CSS_SELECTOR, '#sends-table tr[data-event="start"] td.shown').text == "1 of 1",
                  "the start's send shown on 1 of 1 device")
        flow.step("received")
        flow.click("#end-activity")
        flow.wait(lambda d: d.find_element(By.ID, "activity-status").text == "ended", "the activity to read ended")
        flow.element('#push-timeline li[data-event="end"][data-status="sent"]', "the end push answered in the timeline")
        flow.element('#sends-table tr[data-event="end"]', "the end among the activity's sends")
        flow.step("ended")
        flow.audit("activity")
        flow.shoot("activity")

        flow.click('#devices a[data-device-link="%s"]' % device_id)
        flow.page("device")
        flow.element('#device-copies tr[data-activity-id="%s"]' % activity_id, "the device's copy of the activity")
        flow.element('#device-start-tokens tr', "the device's push-to-start token, shortened")
        flow.step("device")
        flow.audit("device")
        flow.shoot("device")

        driver.get(flow.base + "/dashboard#/apps/%s/overview/hour" % app_id)
        flow.page("overview")
        flow.wait(lambda d: d.find_element(By.CSS_SELECTOR, '#overview-totals dd[data-figure="sends"]').text not in ("", "0"),
                  "the hour's sends in the overview")
        flow.wait(lambda d: d.find_element(By.CSS_SELECTOR, '#overview-totals dd[data-figure="taps"]').text == "1", "the tap counted")
        flow.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#overview-charts svg polyline")) >= 10, "a chart per figure")
        flow.element("#overview-limits table", "the figures in force")
        flow.element("#no-failing-webhooks", "the webhooks, none failing")
        flow.step("overview")
        flow.audit("overview")
        flow.shoot("overview")

        box = flow.element("#lookup-text")
        box.send_keys(device_id)
        box.send_keys(Keys.ENTER)
        flow.page("lookup")
        flow.element('#lookup-devices tr[data-device-id="%s"]' % device_id, "the device found by its id")
        flow.step("lookup")
        flow.audit("lookup")
        flow.shoot("lookup")

        # A test start from the type's form: a required field left empty is named
        # beside its input, as the API words it; filled, the start goes.
        flow.collect_logs()
        expected_from = len(flow.logs)
        flow.click('nav.tabs a[href$="/send"]')
        flow.page("send")
        flow.element('#send-type option[value="DeliveryAttributes"]', "the activity type in the form")
        identifier = flow.element("#send-activity-id")
        identifier.clear()
        identifier.send_keys("order-form-1")
        device = flow.element("#send-device")
        device.clear()
        device.send_keys(device_id)
        flow.element('input[data-field="attributes.order"]').send_keys("A-1")
        flow.element('input[data-field="content_state.status"]').send_keys("preparing")
        flow.click("#send-submit")
        flow.wait(lambda d: d.find_element(By.CSS_SELECTOR, '.field-error[data-for="alert"]').text.strip() != "",
                  "the start's missing alert named beside the alert's fields")
        flow.element("#send-alert-title").send_keys("Your order")
        flow.element("#send-alert-body").send_keys("Preparing")
        flow.click("#send-submit")
        flow.wait(lambda d: d.find_element(By.CSS_SELECTOR, '.field-error[data-for="content_state.eta"]').text.strip() != "",
                  "the missing eta named beside its field")
        flow.element('input[data-field="content_state.eta"]').send_keys("5")
        flow.click("#send-submit")
        flow.wait(lambda d: "1 device" in d.find_element(By.ID, "send-ok").text, "the test start sent to the device")
        # The two refusals the form was meant to get are in the console as failed
        # loads; nothing else of this step may be.
        flow.collect_logs()
        refused = [entry for entry in flow.logs[expected_from:]
                   if entry.get("source") == "network" and "/activities - " in entry.get("message", "")
                   and "status of 422" in entry.get("message", "")]
        if len(refused) != 2:
            raise AssertionError("the form's two refusals were not logged as expected: " + json.dumps(flow.logs[expected_from:]))
        flow.logs = flow.logs[:expected_from] + [entry for entry in flow.logs[expected_from:] if entry not in refused]
        flow.step("send-test")
        flow.audit("send")
        flow.shoot("send")

        driver.get(flow.base + "/dashboard#/apps/%s/pushes?period=hour" % app_id)
        flow.page("pushes")
        flow.wait(lambda d: d.find_elements(By.ID, "pushes-table") or d.find_elements(By.ID, "no-pushes"), "the pushes")
        # The export, fetched as its link would be: the session's cookie signs it.
        href = flow.element("#pushes-filter a.export").get_attribute("href")
        text = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0], { credentials: 'same-origin' }).then(r => r.text().then(t => done(r.status + ' ' + t)))"
            ".catch(e => done('error ' + e));", href)
        if not text.startswith("200 created_at,activity_id,device_id"):
            raise AssertionError("the pushes' CSV export answered: " + text[:300])
        flow.step("pushes")
        flow.audit("pushes")
        flow.shoot("pushes")

        driver.get(flow.base + "/dashboard#/metrics")
        flow.page("metrics")
        flow.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#charts svg polyline")) >= 4, "the delivery charts")
        flow.step("metrics")
        flow.audit("metrics")
        flow.shoot("delivery")

        driver.get(flow.base + "/dashboard#/apps/%s/devices" % app_id)
        flow.page("devices")
        flow.element('#devices-table tr[data-device-id="%s"]' % device_id)
        flow.step("devices")
        flow.audit("devices")
        flow.shoot("devices")

        driver.get(flow.base + "/dashboard#/apps/%s/webhooks" % app_id)
        flow.page("webhooks")
        flow.wait(lambda d: d.find_elements(By.ID, "no-webhooks") or d.find_elements(By.ID, "webhooks-table"), "the webhooks")
        flow.step("webhooks")
        flow.audit("webhooks")

        flow.click("#sign-out")
        flow.page("sign-in")
        driver.get(flow.base + "/dashboard")
        flow.page("sign-in")
        flow.step("signed-out")

        if flow.problems:
            raise AssertionError("accessibility or phone-width problems:\n" + "\n".join(flow.problems))
        flow.collect_logs()
        severe = [entry for entry in flow.logs if entry.get("level") == "SEVERE"]
        if severe:
            raise AssertionError("the console logged errors: " + json.dumps(severe))
        print(json.dumps({"ok": True, "steps": flow.steps, "audited": flow.audited, "log_entries": len(flow.logs)}), flush=True)
        return 0
    except Exception as error:  # the reason, and what the browser saw
        try:
            flow.collect_logs()
        except Exception:
            pass
        print("failed: %s" % error, file=sys.stderr, flush=True)
        print("browser log: %s" % json.dumps(flow.logs), file=sys.stderr, flush=True)
        try:
            print("page: %s" % driver.find_element(By.TAG_NAME, "body").text[:4000], file=sys.stderr, flush=True)
        except Exception:
            pass
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
