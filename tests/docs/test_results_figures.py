"""The figures the results pages, the claims page and the README quote from committed results files equal
those files to their printed precision, and every results file those pages cite is committed.

Each check below binds a page's figures to the file they came from (the page names that file or the command
that writes it); a figure that drifts from its file, or a cited file that is not committed, fails here. Fix
the page (or rerun the command and commit its file), never the test's expectation.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import re
import subprocess

import pytest
from _docs_hooks import ROOT

PAGES = sorted((ROOT / "docs" / "results").glob("*.md")) + [ROOT / "docs" / "claims.md", ROOT / "README.md"]
CITED = re.compile(r"(?<![\w/.-])results/[\w.*/-]*[\w*/]")
NUMBER = re.compile(r"^[+−-]?\d[\d,]*(?:\.\d+)?$")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        pytest.skip("not a git checkout: cannot tell committed files from others")
    return out.stdout.split()


def _page(name: str) -> str:
    return (ROOT / name).read_text()


def _json(name: str) -> dict:
    return json.loads((ROOT / "results" / name).read_text())


def agrees(printed: str, value: float) -> bool:
    """Whether ``value`` rounds to ``printed`` (``"0.127"``, ``"−0.18"``, ``"+7.48"``, ``"12,639"``)."""
    text = printed.strip().replace("−", "-").replace(",", "")
    if not NUMBER.match(printed.strip()):
        raise ValueError(f"not a printed number: {printed!r}")
    digits = len(text.split(".")[1]) if "." in text else 0
    return abs(float(text) - value) <= 0.5 * 10**-digits + 1e-9


def expect(page: str, text: str, pattern: str, values: dict | list, where: str) -> None:
    """``pattern`` (a regex with one group per value) must occur in ``text`` and its groups agree with
    ``values``."""
    m = re.search(pattern, text)
    assert m, f"{page}: no figure matching {pattern!r} ({where})"
    got = list(m.groups())
    want = list(values.values()) if isinstance(values, dict) else list(values)
    bad = [(g, w) for g, w in zip(got, want, strict=True) if not agrees(g, w)]
    assert not bad, f"{page}: printed {bad} (printed, file) differ from {where}"


def test_agrees_reads_the_printed_precision():
    assert agrees("0.127", 0.12749) and not agrees("0.127", 0.1276)
    assert agrees("−0.18", -0.17546) and agrees("+7.48", 7.4754) and agrees("12,639", 12639)
    assert not agrees("0.13", 0.1249) and agrees("0.13", 0.1251) and agrees("0.13", 0.1264)
    with pytest.raises(ValueError):
        agrees("0.1.3", 0.13)


def test_every_results_file_a_page_cites_is_committed():
    tracked = _tracked()
    missing = {}
    for page in PAGES:
        for cited in sorted(set(CITED.findall(page.read_text()))):
            if (ROOT / "docs" / cited).is_file():
                continue  # a link to a docs page (docs/results/*.md), not a results file
            stem = cited.rstrip("/")
            hit = (
                any(fnmatch.fnmatch(t, stem) for t in tracked)  # a file or a pattern
                or any(t.startswith(stem + "/") for t in tracked)  # a folder
                or any(t.startswith(stem + ".") for t in tracked)  # an --out prefix (+ .json, .csv)
            )
            if not hit:
                missing.setdefault(page.relative_to(ROOT).as_posix(), []).append(cited)
    assert not missing, f"pages cite results files that are not committed: {missing}"


def _faithfulness_rows(*files: str) -> list[str]:
    from attnscope.experiments.faithfulness_tables import markdown, pooled

    table = markdown(*pooled([_json(f) for f in files]))
    return [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]


@pytest.mark.parametrize(
    "files",
    [("faithfulness-movies.json", "faithfulness-movies-20-39.json"), ("faithfulness-hatexplain.json",)],
)
def test_faithfulness_tables_are_those_of_the_committed_files(files):
    page = _page("docs/results/faithfulness.md")
    missing = [row for row in _faithfulness_rows(*files) if row not in page]
    assert not missing, f"docs/results/faithfulness.md differs from {files} (faithfulness_tables): {missing}"


VERDICT_WORDS = {"beats": "better", "trails": "worse", "does not differ from": "no difference"}
VERDICT = re.compile(
    r"`(\w+)`\s+(beats|trails|does\s+not\s+differ\s+from)\s+random\s+on\s+(AOPC\s+comprehensiveness|"
    r"AOPC\s+sufficiency|comprehensiveness|sufficiency)"
)
VERDICT_METRICS = {
    "comprehensiveness": "comprehensiveness",
    "sufficiency": "sufficiency",
    "AOPC comprehensiveness": "aopc_comprehensiveness",
    "AOPC sufficiency": "aopc_sufficiency",
}


def _interval_sections() -> list[tuple[str, list[dict]]]:
    """(section text, the per-example results it cites) for each ``##``/``###`` section of the faithfulness
    page citing a committed results file that keeps per-example values, in the order the section first
    cites them (its ``faithfulness_tables`` command's: the pooled bootstrap resamples the examples in that
    order)."""
    page = _page("docs/results/faithfulness.md")
    out = []
    for section in re.split(r"\n(?=##+ )", page):
        names = list(dict.fromkeys(c for c in CITED.findall(section) if c.endswith(".json")))
        results = [r for r in (_json(n.removeprefix("results/")) for n in names) if r.get("per_example")]
        if results:
            out.append((section, results))
    return out


def test_faithfulness_interval_tables_are_those_of_the_committed_files():
    from attnscope.experiments.faithfulness_tables import interval_markdown

    sections = _interval_sections()
    assert sections, "docs/results/faithfulness.md cites no results file with per-example values"
    for section, results in sections:
        table = interval_markdown(results)
        missing = [line for line in table.splitlines() if line.startswith("| ") and line not in section]
        assert not missing, f"faithfulness.md: interval rows differ from their files (faithfulness_tables): {missing}"


def test_faithfulness_verdict_words_follow_the_committed_intervals():
    """Every "`explainer` beats / trails / does not differ from random on metric" in the page is the verdict
    of the paired 95 % interval (explainer - random) of the files its section cites."""
    from attnscope.experiments.faithfulness_tables import pooled_examples, verdict
    from attnscope.pipelines.faithfulness_uncertainty import interval_table

    checked = 0
    for section, results in _interval_sections():
        values = pooled_examples(results)
        explainers = [row["explainer"] for row in results[0]["rows"]]
        diffs = interval_table(values, explainers, list(VERDICT_METRICS.values()), "random")
        for explainer, words, metric in VERDICT.findall(section):
            words, metric = " ".join(words.split()), " ".join(metric.split())
            key = VERDICT_METRICS[metric]
            better = "lower" if "sufficiency" in key else "higher"
            want = verdict(diffs[explainer][key], better)
            assert VERDICT_WORDS[words] == want, (
                f"faithfulness.md says `{explainer}` {words} random on {metric}; the interval "
                f"{diffs[explainer][key]} says {want}"
            )
            checked += 1
    assert checked >= 3, f"the faithfulness page states only {checked} verdicts in the checked form"


def test_faithfulness_prose_figures():
    from attnscope.experiments.faithfulness_tables import pooled

    page = _page("docs/results/faithfulness.md")
    head, _ = pooled([_json("faithfulness-movies.json"), _json("faithfulness-movies-20-39.json")])
    t = head["truncation"]
    where = "results/faithfulness-movies*.json"
    expect("faithfulness.md", page, r"classifier accuracy on these reviews (\d\.\d+)", [head["accuracy"]], where)
    expect(
        "faithfulness.md",
        page,
        r"(\d+) of the 40\s+reviews were truncated, cutting ([\d,]+) tokens and ([\d,]+) of ([\d,]+) human-rationale",
        [t["examples_truncated"], t["tokens_cut"], t["human_tokens_lost"], t["human_tokens"]],
        where,
    )
    hx = _json("faithfulness-hatexplain.json")
    expect("faithfulness.md", page, r"classifier accuracy on these 300: (\d\.\d+)", [hx["accuracy"]], "hatexplain")
    for name, n in (("faithfulness-movies-rollout-10.json", 10), ("faithfulness-hatexplain-50.json", 50)):
        r = _json(name)
        assert r["n"] == n, f"results/{name} holds {r['n']} examples; the page says {n}"
        expect("faithfulness.md", page, rf"ccuracy on these {n}: (\d\.\d+)", [r["accuracy"]], name)


def test_claims_seed_sds_of_the_text_arms():
    with (ROOT / "results" / "experiments" / "arms.csv").open() as f:
        sds = [
            100 * float(r["sd"])
            for r in csv.DictReader(f)
            if r["arm"].startswith("text-") and r["metric"] == "accuracy"
        ]
    expect(
        "docs/claims.md",
        _page("docs/claims.md"),
        r"seed-to-seed standard deviations of (\S+)–(\S+) points on the text arms",
        [min(sds), max(sds)],
        "results/experiments/arms.csv (text arms' accuracy sd, points)",
    )


def test_probe_table_is_the_committed_seed0_measurement():
    from attnscope.analysis.stats import proportion_interval

    page = _page("docs/results/structure-measure.md")
    for arm in ("text-ea", "text-vanilla"):
        m = json.loads((ROOT / "results" / "experiments" / "measures" / f"{arm}-seed0.json").read_text())
        want = []
        for classifier, layer in (("cnn", 1), ("logistic", 1), ("cnn", 0)):
            p = m["probe"][classifier]
            iv = proportion_interval(round(p["accuracy"][layer] * m["n"]), m["n"])
            want += [p["accuracy"][layer], p["fold_sd"][layer], iv.low, iv.high]
        cell = r"(\S+) ± (\S+) \[(\S+), (\S+)\]"
        expect("structure-measure.md", page, rf"\| `{arm}` \| {cell} \| {cell} \| {cell} \|", want, f"{arm}-seed0.json")


def _heads_table(heads: dict) -> list[str]:
    rows = []
    for i in range(5):
        s, p, d, n = (heads[k][i] for k in ("sink", "previous", "duplicate", "induction"))
        rows.append(
            f"| {s['head']} | {s['score']:.3f} | {p['head']} | {p['score']:.3f} | {d['head']} | {d['score']:.3f} "
            f"({d['min_over_seeds']:.3f}) | {n['head']} | {n['score']:.3f} ({n['min_over_seeds']:.3f}) |"
        )
    return rows


def test_smollm2_head_scores_in_the_llm_page_and_the_readme():
    heads = _json("smollm2-heads.json")
    llm = _page("docs/results/llm.md")
    missing = [row for row in _heads_table(heads) if row not in llm]
    assert not missing, f"docs/results/llm.md differs from results/smollm2-heads.json: {missing}"
    c = heads["counts"]
    expect(
        "llm.md",
        llm,
        r"Of (\d+) heads, (\d+) are sink heads \(score ≥ 0.5\), (\d+) previous-token, (\d+) duplicate-token "
        r"and (\d+) induction",
        [c["heads"], c["sink"], c["previous"], c["duplicate"], c["induction"]],
        "smollm2-heads.json counts",
    )
    expect(
        "llm.md",
        llm,
        r"loss falls from (\S+) nats per token on the first\s+copy to (\S+) on the second",
        [heads["probe_loss"]["first_copy"], heads["probe_loss"]["second_copy"]],
        "smollm2-heads.json probe_loss",
    )
    readme = _page("README.md")
    s, p, n = heads["sink"][0], heads["previous"][0], heads["induction"][0]
    expect(
        "README.md",
        readme,
        rf"Of SmolLM2's (\d+) heads, (\d+) are sink heads\s+\({s['head']} (\S+)\), {p['head']} the strongest "
        rf"previous-token head \((\S+)\) and {n['head']} the strongest induction head\s+\((\S+) on",
        [c["heads"], c["sink"], s["score"], p["score"], n["score"]],
        "results/smollm2-heads.json",
    )


def test_smollm2_head_tests_in_the_llm_page():
    from attnscope.pipelines.decoder_heads import tests_markdown

    heads = _json("smollm2-heads.json")
    llm = _page("docs/results/llm.md")
    missing = [line for line in tests_markdown(heads).splitlines() if line and line not in llm]
    assert not missing, f"docs/results/llm.md differs from the tests of results/smollm2-heads.json: {missing}"
    t = heads["tests"]
    expect(
        "llm.md",
        llm,
        r"labelled induction by their mean, (\d+) \(L18H6, L17H3, L17H4\) stand out after either",
        [t["induction"]["holm"]["count"]],
        "smollm2-heads.json tests",
    )
    assert t["induction"]["holm"]["heads"] == t["induction"]["bh"]["heads"] == ["L18H6", "L17H3", "L17H4"]
    assert t["duplicate"]["holm"]["heads"] == t["duplicate"]["bh"]["heads"] == ["L14H3"]


def test_interventions_page_figures():
    page = _page("docs/results/interventions.md")
    abl = _json("interventions/smollm2-induction-ablation.json")
    r = abl["random_loss_increase"]
    expect(
        "interventions.md", page, r"top-5 induction heads \| \*\*(\S+)\*\*", [abl["top_k_loss_increase"]], "ablation"
    )
    expect("interventions.md", page, r"mean ± std \| (\S+) ± (\S+) \|", [r["mean"], r["std"]], "ablation")
    expect("interventions.md", page, r"min, max \| (\S+), (\S+) \|", [r["min"], r["max"]], "ablation")
    expect("interventions.md", page, r"clean loss\s+(\d+\.\d+)", [abl["clean_second_copy_loss"]], "ablation")
    top = r",\s+".join(rf"{h['head']} (\d\.\d+)" for h in abl["top_heads"])
    expect("interventions.md", page, top, [h["induction_score"] for h in abl["top_heads"]], "ablation")
    grid = _json("interventions/minilm-sst2-head-effects.json")
    from attnscope.experiments.head_rankings import ranking

    missing = [line for line in ranking(grid).splitlines() if line and line not in page]
    assert not missing, f"interventions.md differs from head_rankings of minilm-sst2-head-effects.json: {missing}"
    layer = grid["layer_mean_abs_effect"]
    expect("interventions.md", page, r"L0 to L5: " + ", ".join([r"(\d\.\d+)"] * 6), layer, "grid")
    negative = sum(r["mean_effect"] < 0 for r in grid["rows"])
    expect("interventions.md", page, r"(\d+) of 72 mean effects are\s+negative", [negative], "grid")


def test_zoo_accuracy_table_is_the_manifests_with_wilson_intervals():
    """Each zoo row's held-out accuracy is its committed manifest's, and its interval the 95 % Wilson
    interval of that accuracy over the n examples the row names."""
    from attnscope.analysis.stats import proportion_interval

    page = _page("docs/results/zoo.md")
    row = r"^\| `([\w-]+)` \| [^|]+ \| [^|(]+\(([\d,]+)\) \| [\d,]+ \| ([\d.]+)% \| \[([\d.]+), ([\d.]+)\] \|"
    rows = re.findall(row, page, flags=re.M)
    assert len(rows) >= 17, f"zoo.md: {len(rows)} accuracy rows with an interval"
    for name, n, acc, low, high in rows:
        manifest = json.loads((ROOT / "models" / "zoo" / "checkpoints" / name / "manifest.json").read_text())
        n, want = int(n.replace(",", "")), manifest["eval_accuracy"]
        iv = proportion_interval(round(want * n), n)
        assert agrees(acc, 100 * want), f"zoo.md: {name} accuracy {acc}% but its manifest says {want}"
        assert agrees(low, 100 * iv.low) and agrees(high, 100 * iv.high), f"zoo.md: {name} interval [{low}, {high}]"
