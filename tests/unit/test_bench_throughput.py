"""tests/bench/throughput.py and matrix.py: the pure parts (paths, stamps, medians, the matrix's ratios)."""

from tests.bench import manifests, matrix, throughput


def test_every_benchmark_object_gets_the_path_of_its_kind():
    paths = {o["kind"]: throughput.object_path(o) for o in (e.manifest() for e in manifests.generate(400))}
    assert paths["Namespace"] == "/api/v1/namespaces/bench-09"  # the last one of each kind
    assert paths["CustomResourceDefinition"] == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + manifests.CRD_NAME
    assert paths["ClusterRole"] == "/apis/rbac.authorization.k8s.io/v1/clusterroles/bench-reader"
    assert paths["ConfigMap"].startswith("/api/v1/namespaces/bench-") and "/configmaps/configmap-" in paths["ConfigMap"]
    assert paths["Deployment"].startswith("/apis/apps/v1/namespaces/bench-") and "/deployments/" in paths["Deployment"]
    assert "/apis/bench.stacksync.io/v1/namespaces/" in paths["Widget"] and "/widgets/" in paths["Widget"]
    assert len(paths) == len(manifests.API_VERSIONS)


def test_stamped_bodies_carry_the_engines_stamps_and_unstamp_back_to_the_manifest():
    first, rest = throughput.workload(60)
    assert {o["kind"] for o in first} == {"Namespace", "CustomResourceDefinition"}
    assert not {o["kind"] for o in rest} & {"Namespace", "CustomResourceDefinition"}
    originals = {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")): o
                 for o in (e.manifest() for e in manifests.generate(60))}
    for obj in first + rest:
        meta = obj["metadata"]
        assert meta["labels"]["stacksync.io/stack"] == throughput.STACK
        assert meta["annotations"]["stacksync.io/checksum"].startswith("sha256:")
        assert len(meta["annotations"]["stacksync.io/checksum"]) == len("sha256:") + 64
        assert throughput.unstamped(obj) == originals[(obj["kind"], meta["name"], meta.get("namespace"))]


def test_medians_summarize_the_rounds_of_each_client_and_level():
    rows = [dict(client="raw", inflight=16, objects=10, seconds=s, cpu_s=0.1, load=1.0, bulk_s=s - 0.5) for s in (3.0, 1.0, 2.0)]
    rows.append(dict(client="engine", inflight=16, objects=10, seconds=5.0, cpu_s=0.2, load=1.0))
    summary = {r["client"]: r for r in throughput.medians(rows)}
    assert summary["raw"]["seconds"] == 2.0 and summary["raw"]["bulk_s"] == 1.5
    assert summary["raw"]["range_s"] == "1.00-3.00" and summary["raw"]["rounds"] == 3
    assert summary["engine"]["seconds"] == 5.0 and summary["engine"]["rounds"] == 1


def _record(tool, scenario, seconds, cpu):
    return dict(tool=tool, scenario=scenario, seconds=seconds, cpu_seconds=cpu, ok=True, requests_total=14, rss_mb=100,
                load_avg=1.0)


def test_matrix_ratios_are_taken_within_the_run_and_the_form():
    results = {"records": [_record("stacksync", "first", 2.0, 1.5), _record("stacksync@module", "first", 2.5, 2.0),
                           _record("stacksync@env", "first", 1.8, 1.4), _record("stacksync@cfg", "first", 5.0, 1.6),
                           _record("stacksync-query", "first", 9.0, 9.0),
                           _record("k8s-list", "first", 20.0, 7.0), _record("kubectl", "first", 30.0, 28.0),
                           _record("stacksync-query@module", "noop", 1.5, 1.4)]}
    rows = {(r["tool"], r["scenario"]): r for r in matrix.rows(results)}
    assert set(rows) == {("stacksync", "first"), ("stacksync@module", "first"), ("stacksync@env", "first"),
                         ("stacksync@cfg", "first"), ("stacksync-query", "first"), ("stacksync-query@module", "noop")}
    assert rows[("stacksync", "first")]["k8s-list"] == 10.0 and rows[("stacksync", "first")]["kubectl"] == 15.0
    # against the median of the form's controller-process rows (2.0 s, 1.5 s CPU), not another form's
    assert rows[("stacksync@module", "first")]["module_ratio"] == 1.25
    assert rows[("stacksync@module", "first")]["module_cpu_ratio"] == 1.33
    assert rows[("stacksync-query@module", "noop")]["kubectl"] is None  # no peer, no controller row in that run
    assert "module_ratio" not in rows[("stacksync-query@module", "noop")]
    assert "| first | stacksync@module | 2.50 | 2.0 | 14 | 8.0x | 12.0x | 1.25x / 1.33x | 1.0 |" in matrix.markdown(rows.values())
