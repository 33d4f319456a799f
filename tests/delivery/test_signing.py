"""The delivery signature (app/delivery/signing.py) is the one ``standardwebhooks`` makes and
verifies: the same bytes for any secret form, body and time."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
import standardwebhooks

from app.delivery.signing import Signer

KEY = base64.b64encode(b"a secret of some length 0123456789").decode()


@pytest.mark.parametrize("secret", ["whsec_" + KEY, "whsec_" + KEY.rstrip("="), KEY])
@pytest.mark.parametrize(
    "body", [b"{}", '{"f":"é ✓ \\udc80"}'.encode(), b"[" + b"1," * 5000 + b"1]"]
)
def test_the_signature_is_the_packages(secret: str, body: bytes) -> None:
    now_s = 1_760_000_000.75
    ours = Signer(secret).headers("msg_abc", body, now_s)
    package = standardwebhooks.Webhook(secret)
    at = datetime.fromtimestamp(int(now_s), tz=UTC)
    assert ours == {
        "webhook-id": "msg_abc",
        "webhook-timestamp": "1760000000",
        "webhook-signature": package.sign("msg_abc", at, body.decode()),
    }


def test_a_bad_secret_is_refused_as_the_package_refuses_it() -> None:
    with pytest.raises(standardwebhooks.webhooks.EmptyWebhookSecretError):
        Signer("whsec_")
