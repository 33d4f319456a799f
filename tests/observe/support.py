"""Reading ``/metrics`` as Prometheus does: the text parser of prometheus-client."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from prometheus_client.parser import text_string_to_metric_families

from tests.support.waiting import until_async

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and sorted labels."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value; 0 when the series does not exist (yet)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def labels_of(samples: Samples, name: str, label: str) -> set[str]:
    return {dict(lbls)[label] for (n, lbls) in samples if n == name}


async def scraped(
    scrape: Callable[[], Awaitable[Samples]], ok: Callable[[Samples], bool], what: str
) -> Samples:
    """Scrape until ``ok`` holds (the state behind a gauge changes asynchronously), and return
    the samples that showed it."""

    async def showing() -> tuple[Samples] | None:
        samples = await scrape()
        return (samples,) if ok(samples) else None

    return (await until_async(showing, what=what))[0]
