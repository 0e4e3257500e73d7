"""Machine descriptions: presets, machine files, and one ValueError per bad input naming
what is missing or wrong (no tilelang needed)."""
import json

import pytest
from hypothesis import given, settings, strategies as st

import meshtensor
from meshtensor.machines import FIELDS, OPTIONAL_FIELDS, PRESETS, Machine, get_machine, \
    load_machine, machine_names

STATUS = ("published:", "derived:", "measured:", "assumed:")
GOOD = {"name": "chip", "mesh_shape": [4, 4], "flops_per_s": {"float32": 2e9},
        "mem_bandwidth": 8e9, "link_bandwidth": 8e9, "hop_latency": 1.5e-9,
        "message_overhead": 1e-8, "local_memory_bytes": 32768}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_number_says_where_it_comes_from(name):
    m = PRESETS[name]
    given = {k for k in OPTIONAL_FIELDS if k in m.as_dict()}
    assert set(m.sources) == set(FIELDS) | given  # the mesh's too, and every option set
    for key, src in m.sources.items():
        assert src.startswith(STATUS), (name, key, src)
    assumed = sum(s.startswith("assumed:") for s in m.sources.values())
    if name == "generic":  # every number of the generic preset is an assumption
        assert assumed == len(m.sources)
    elif name == "sunmmio-a4e":  # its target gives the mesh and the memories only
        assert {k for k, s in m.sources.items() if not s.startswith("assumed:")} == \
            {"mesh_shape", "memories", "local_memory_bytes", "overlap"}
    else:  # a published chip: most of its numbers are not assumptions
        assert assumed <= 1


def test_presets_hold_the_published_figures():
    e16, wh = PRESETS["epiphany-e16g301"], PRESETS["wormhole-n300"]
    assert (e16.mesh_shape, e16.hop_latency, e16.local_memory_bytes) == ((4, 4), 1.5e-9, 32768)
    assert e16.rate("float32") * 16 == 32e9  # 32 GFLOPS peak over 16 cores
    assert (wh.link_bandwidth, wh.hop_latency, wh.local_memory_bytes) == (32e9, 9e-9, 1499136)
    assert wh.rate("bfloat16") == 2.048e12 and wh.core_mem_bandwidth(64) * 64 == 288e9
    assert wh.rate("float32") == 1.024e12  # TF32 on the matrix unit, 4 fidelity phases
    assert wh.torus == (True, True) and wh.multicast and wh.overlap == 1.0
    # the fit to the one-to-one table: 22 cycles per message, 268 per barrier, so a
    # 7-message broadcast's fixed costs are 7 x 22 + 268 = 422 cycles (was 7 x 294)
    assert (wh.message_overhead, wh.barrier_latency) == (2.2e-8, 2.68e-7)
    sun = PRESETS["sunmmio-a4e"]  # the upstream target's facts
    assert sun.mesh_shape == (4, 4) and dict(sun.memories) == {
        "shared.asram": 1048576, "shared.rsram": 1536000, "shared.wsram": 2097152}
    g = PRESETS["generic"]  # the traffic analysis's defaults are the same assumptions
    assert (g.link_bandwidth, g.hop_latency) == (32e9, 1e-9)
    assert meshtensor.get_machine is get_machine and machine_names() == sorted(PRESETS)


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_machine_files_load(tmp_path, fmt):
    p = tmp_path / f"mychip.{fmt}"
    if fmt == "json":
        p.write_text(json.dumps({k: v for k, v in GOOD.items() if k != "name"}))
    else:
        p.write_text('mesh_shape = [4, 4]\nmem_bandwidth = 8e9\nlink_bandwidth = 8e9\n'
                     'hop_latency = 1.5e-9\nmessage_overhead = 1e-8\n'
                     'local_memory_bytes = 32768\n[flops_per_s]\nfloat32 = 2e9\n')
    m = get_machine(str(p))
    assert m.name == "mychip"  # the file's stem
    assert m == Machine.from_dict({**GOOD, "name": "mychip"})
    assert m.fits((4, 4)) and m.fits((2,)) and not m.fits((4, 8)) and not m.fits((2, 2, 2))


def test_replace_and_round_trip():
    m = PRESETS["wormhole-n300"]
    assert Machine.from_dict(m.as_dict()) == m
    assert Machine.from_dict(json.loads(json.dumps(m.as_dict()))) == m  # as a file holds it
    sun = PRESETS["sunmmio-a4e"]
    assert Machine.from_dict(json.loads(json.dumps(sun.as_dict()))) == sun
    assert m.replace(link_bandwidth=64e9).link_bandwidth == 64e9
    assert hash(m) == hash(Machine.from_dict(m.as_dict()))


@pytest.mark.parametrize("change,message", [
    pytest.param({"hop_latency": -1e-9}, "machine 'chip': hop_latency must be >= 0 and "
                 "finite, got -1e-09", id="negative-hop-latency"),
    pytest.param({"link_bandwidth": 0}, "link_bandwidth must be > 0", id="zero-link"),
    pytest.param({"mem_bandwidth": -5.0}, "mem_bandwidth must be > 0 and finite, got -5.0",
                 id="negative-memory"),
    pytest.param({"flops_per_s": {"float32": -1}}, r"flops_per_s\['float32'\] must be > 0",
                 id="negative-flops"),
    pytest.param({"flops_per_s": {}}, "flops_per_s must map element types", id="no-flops"),
    pytest.param({"local_memory_bytes": -1}, "local_memory_bytes must be a positive int, "
                 "got -1", id="negative-memory-size"),
    pytest.param({"mesh_shape": [4, -4]}, r"mesh_shape must be a non-empty list of "
                 r"positive ints, got \(4, -4\)", id="negative-mesh"),
    pytest.param({"message_overhead": "10ns"}, "message_overhead must be a number, got "
                 "'10ns'", id="not-a-number"),
    pytest.param({"hop_latency": float("nan")}, "hop_latency must be >= 0 and finite",
                 id="nan"),
    pytest.param({"bandwidth": 1.0}, "unknown field.s. bandwidth; a machine has mesh_shape",
                 id="unknown-field"),
    pytest.param({"sources": "datasheet"}, "machine 'chip': sources must map field names "
                 "to where their numbers come from .strings., got 'datasheet'",
                 id="sources-not-a-table"),
    pytest.param({"sources": {"hop_latency": 1.5}}, "sources must map field names",
                 id="source-not-a-string"),
    pytest.param({"overlap": 1.5}, r"machine 'chip': overlap must be in \[0, 1\], got 1.5",
                 id="overlap-above-1"),
    pytest.param({"torus": [True]}, "torus must list one boolean per mesh axis .2., got "
                 r"\(True,\)", id="torus-one-axis"),
    pytest.param({"barrier_latency": -1}, "barrier_latency must be >= 0", id="neg-barrier"),
    pytest.param({"multicast_bandwidth": 0}, "multicast_bandwidth must be > 0",
                 id="zero-multicast"),
    pytest.param({"memories": {"shared.rsram": 0}}, "memories must map buffer scopes to "
                 "positive ints", id="empty-memory"),
])
def test_bad_numbers_name_the_field(change, message):
    with pytest.raises(ValueError, match=message):
        Machine.from_dict({**GOOD, **change})


@pytest.mark.parametrize("drop", ["hop_latency", "flops_per_s", "local_memory_bytes"])
def test_missing_fields_are_named(tmp_path, drop):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({k: v for k, v in GOOD.items() if k != drop}))
    with pytest.raises(ValueError, match=f"machine file '{p}': missing {drop} "
                                         f"\\(a machine needs mesh_shape"):
        load_machine(p)


def test_negative_number_in_a_file_is_named(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({**GOOD, "link_bandwidth": -8e9}))
    with pytest.raises(ValueError, match="machine 'chip': link_bandwidth must be > 0 and "
                                         "finite, got -8000000000.0"):
        get_machine(p)


@pytest.mark.parametrize("spec,message", [
    pytest.param("tpu-v9", "unknown machine 'tpu-v9'; known machines: epiphany-e16g301, "
                 "epiphany-e64g401, generic, sunmmio-a4e, wormhole-n300", id="unknown-name"),
    pytest.param("nowhere.json", "machine file 'nowhere.json': cannot read it", id="no-file"),
])
def test_unknown_machine(spec, message):
    with pytest.raises(ValueError, match=message):
        get_machine(spec)


def test_bad_file_contents(tmp_path):
    p = tmp_path / "m.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_machine(p)
    q = tmp_path / "m.yaml"
    q.write_text("x: 1")
    with pytest.raises(ValueError, match=r"expected a \.json or \.toml file"):
        load_machine(q)


def test_missing_dtype_rate_names_what_the_machine_has():
    with pytest.raises(ValueError, match="machine 'epiphany-e16g301' has no FLOP/s for "
                                         "bfloat16 .it lists float32."):
        PRESETS["epiphany-e16g301"].rate("bfloat16")


@settings(max_examples=50, deadline=None)
@given(st.floats(1e6, 1e15), st.floats(0, 1e-3), st.integers(1, 1 << 30),
       st.lists(st.integers(1, 64), min_size=1, max_size=3))
def test_valid_numbers_round_trip(rate, latency, mem, shape):
    m = Machine("m", tuple(shape), {"float32": rate}, rate, rate, latency, latency, mem)
    assert Machine.from_dict(m.as_dict()) == m
    assert m.fits(tuple(shape)) and m.rate("float32") == rate
