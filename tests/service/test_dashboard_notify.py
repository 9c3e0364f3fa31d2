"""The schedules and notifications pages in process: an editor adds, disables and deletes a schedule, an
admin adds a webhook with thresholds; a viewer sees both pages without forms (a webhook URL by host only),
and the routes refuse a viewer (403) and a forged CSRF token."""

from __future__ import annotations

from .fixtures import Env
from .test_dashboard import sign_in


def test_schedules_page_editor_and_viewer(env: Env) -> None:
    c = env.client
    assert c.get("/schedules", follow_redirects=False).status_code == 303  # signed out: to the login page
    csrf = sign_in(c, env.tokens["a_editor"])
    page = c.get("/schedules")
    assert page.status_code == 200 and "No schedules yet" in page.text and "New schedule" in page.text
    assert '<option value="global">' not in page.text  # a global schedule is for admins
    form = {
        "csrf": csrf,
        "name": "nightly-findings",
        "cron": "0 6 * * *",
        "kind": "findings",
        "params": '{"headroom": 0.3}',
    }
    r = c.post("/schedules", data=form, follow_redirects=False)
    assert r.status_code == 303, r.text
    page = c.get("/schedules").text
    assert "nightly-findings" in page and "<code>0 6 * * *</code>" in page and "06:00 UTC" in page
    bad = c.post("/schedules", data=form | {"cron": "0 6 * *"})
    assert bad.status_code == 400 and "has 4 fields, not 5" in bad.text and 'role="alert"' in bad.text
    assert 'value="0 6 * *"' in bad.text  # the form keeps what was typed
    bad = c.post("/schedules", data=form | {"params": "{nope"})
    assert bad.status_code == 400 and "not valid JSON" in bad.text
    refresh = form | {"kind": "catalog_refresh", "params": '{"provider": "aws"}', "scope": "global"}
    assert c.post("/schedules", data=refresh).status_code == 403
    assert c.post("/schedules", data=form | {"csrf": "forged"}).status_code == 403
    sid = c.get("/api/v1/schedules", headers=env.h("a_viewer")).json()[0]["id"]
    assert c.post(f"/schedules/{sid}/toggle", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert c.get(f"/api/v1/schedules/{sid}", headers=env.h("a_viewer")).json()["enabled"] is False

    viewer = env.client.__class__(env.app)
    vcsrf = sign_in(viewer, env.tokens["a_viewer"])
    vpage = viewer.get("/schedules").text
    assert "nightly-findings" in vpage and "New schedule" not in vpage
    assert "Disable" not in vpage and "Enable" not in vpage
    assert viewer.post("/schedules", data=form | {"csrf": vcsrf}).status_code == 403
    assert viewer.post(f"/schedules/{sid}/delete", data={"csrf": vcsrf}).status_code == 403
    other = env.client.__class__(env.app)
    ocsrf = sign_in(other, env.tokens["b_admin"])
    assert "nightly-findings" not in other.get("/schedules").text  # another team's schedule
    assert other.post(f"/schedules/{sid}/delete", data={"csrf": ocsrf}).status_code == 404
    assert c.post(f"/schedules/{sid}/delete", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert c.get("/api/v1/schedules", headers=env.h("a_viewer")).json() == []


def test_notifications_page_admin_and_viewer(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_admin"])
    page = c.get("/notifications").text
    assert "No webhooks yet" in page and "New webhook" in page
    form = {
        "csrf": csrf,
        "url": "https://hooks.example.com/services/T000/SECRET",
        "format": "slack",
        "events": ["saving_found", "price_change"],
        "min_saving_usd_per_month": "250",
        "min_price_change_percent": "5",
    }
    r = c.post("/notifications", data=form, follow_redirects=False)
    assert r.status_code == 303, r.text
    [hook] = c.get("/api/v1/webhooks", headers=env.h("a_admin")).json()
    assert hook["events"] == ["price_change", "saving_found"]
    assert hook["min_saving_usd_per_month"] == 250.0 and hook["min_price_change_fraction"] == 0.05
    page = c.get("/notifications").text
    assert "$250/month" in page and "5 %" in page and "SECRET" in page
    bad = c.post("/notifications", data=form | {"min_saving_usd_per_month": "lots"})
    assert bad.status_code == 400 and "is not a number" in bad.text
    bad = c.post("/notifications", data=form | {"events": []})
    assert bad.status_code == 400 and "(one or more)" in bad.text

    viewer = env.client.__class__(env.app)
    vcsrf = sign_in(viewer, env.tokens["a_viewer"])
    vpage = viewer.get("/notifications").text
    assert "hooks.example.com" in vpage and "SECRET" not in vpage and "New webhook" not in vpage
    assert viewer.post("/notifications", data=form | {"csrf": vcsrf}).status_code == 403
    assert viewer.post(f"/notifications/{hook['id']}/delete", data={"csrf": vcsrf}).status_code == 403
    assert (
        c.post(f"/notifications/{hook['id']}/delete", data={"csrf": csrf}, follow_redirects=False).status_code
        == 303
    )
    assert c.get("/api/v1/webhooks", headers=env.h("a_admin")).json() == []
