#!/usr/bin/env python3
"""Checks a Perfetto trace written by tracekit against the Chrome JSON of the
same input, using Perfetto's own compiled protos (the `perfetto` package on
PyPI) to decode it.

    perfetto_check.py TRACE.pftrace TRACE.json

The Perfetto trace is interpreted as the protos' comments define it:
per-sequence interned data (cleared by SEQ_INCREMENTAL_STATE_CLEARED),
TracePacketDefaults (default track uuid and clock id), sequence-scoped
incremental clocks anchored by ClockSnapshot packets, TrackDescriptors.
Packets in compressed bundles (compressed_packets) are expanded in place.
Both traces are reduced to the same canonical records, per process (its
name) and track (its name): slices (start, duration, name, category,
arguments; B/E pairs and X alike), instants, counter samples, and flows
(the slices each flow joins). Exit status 0 when they are equal, 1 with
the differences otherwise. Prints a one-line summary of what was compared.
"""
import collections
import json
import sys
import zlib

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

SEQ_INCREMENTAL_STATE_CLEARED = 1
BOOTTIME = 6


def close(a, b):
    return abs(a - b) <= 2  # ns: Chrome's microseconds are doubles


def canonical_args(args):
    return json.dumps(args, sort_keys=True)


def packets(data):
    """The trace's packets in order, those of compressed bundles
    (`compressed_packets`: zlib-deflated Trace.packet fields) expanded in
    their place, as trace_processor reads them."""
    trace = pb.Trace()
    trace.ParseFromString(data)
    for p in trace.packet:
        if p.HasField("compressed_packets"):
            yield from packets(zlib.decompress(p.compressed_packets))
        else:
            yield p


def read_perfetto(path):
    with open(path, "rb") as f:
        data = f.read()
    tracks = {}  # uuid -> dict(kind, pid, name, parent)
    seqs = {}
    slices, instants, counters = [], [], []
    marks = []  # slice begins and ends, in file order
    open_slices = collections.defaultdict(list)
    flows = collections.defaultdict(dict)  # id -> {"from": key, "to": key}

    def seq_state(sid):
        return seqs.setdefault(sid, {"names": {}, "cats": {}, "ann": {}, "defaults": None, "clocks": {}})

    for p in packets(data):
        sid = p.trusted_packet_sequence_id
        st = seq_state(sid)
        if p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            st.update({"names": {}, "cats": {}, "ann": {}, "defaults": None})
        if p.HasField("trace_packet_defaults"):
            st["defaults"] = p.trace_packet_defaults
        if p.HasField("interned_data"):
            d = p.interned_data
            for e in d.event_names:
                st["names"][e.iid] = e.name
            for e in d.event_categories:
                st["cats"][e.iid] = e.name
            for e in d.debug_annotation_names:
                st["ann"][e.iid] = e.name
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                st["clocks"][c.clock_id] = {"value": c.timestamp, "incremental": c.is_incremental}
            boot = next((c.timestamp for c in p.clock_snapshot.clocks if c.clock_id == BOOTTIME), None)
            for c in p.clock_snapshot.clocks:
                if c.clock_id != BOOTTIME:
                    st["clocks"][c.clock_id]["boot_offset"] = (boot - c.timestamp) if boot is not None else 0
            continue
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            t = tracks.setdefault(d.uuid, {"kind": "named", "pid": None, "name": None, "parent": None})
            if d.HasField("process"):
                t.update(kind="process", pid=d.process.pid)
                if d.process.process_name:
                    t["name"] = d.process.process_name
            elif d.HasField("thread"):
                t.update(kind="thread", pid=d.thread.pid, tid=d.thread.tid)
                if d.thread.thread_name:
                    t["name"] = d.thread.thread_name
            else:
                if d.HasField("counter"):
                    t["kind"] = "counter"
                if d.name:
                    t["name"] = d.name
            if d.HasField("parent_uuid"):
                t["parent"] = d.parent_uuid
            continue
        if not p.HasField("track_event"):
            continue
        # Time.
        clock_id = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else (
            st["defaults"].timestamp_clock_id if st["defaults"] is not None and st["defaults"].HasField("timestamp_clock_id") else BOOTTIME)
        if clock_id == BOOTTIME:
            ts = p.timestamp
        else:
            c = st["clocks"][clock_id]
            if c["incremental"]:
                c["value"] += p.timestamp
                ts = c["value"] + c.get("boot_offset", 0)
            else:
                ts = p.timestamp + c.get("boot_offset", 0)
        te = p.track_event
        uuid = te.track_uuid if te.HasField("track_uuid") else st["defaults"].track_event_defaults.track_uuid
        name = st["names"][te.name_iid] if te.HasField("name_iid") else (te.name if te.HasField("name") else None)
        cats = [st["cats"][i] for i in te.category_iids] + list(te.categories)
        args = {}
        for a in te.debug_annotations:
            key = st["ann"][a.name_iid] if a.HasField("name_iid") else a.name
            kind = a.WhichOneof("value")
            v = getattr(a, kind)
            if kind == "legacy_json_value":
                v = json.loads(v)
            args[key] = v
        ev = {"uuid": uuid, "ts": ts, "name": name, "cat": cats[0] if cats else "", "args": args}
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            ev["flows"] = [(i, False) for i in te.flow_ids] + [(i, True) for i in te.terminating_flow_ids]
            ev["begin"] = True
            marks.append(ev)
        elif te.type == pb.TrackEvent.TYPE_SLICE_END:
            ev["begin"] = False
            marks.append(ev)
        elif te.type == pb.TrackEvent.TYPE_INSTANT:
            instants.append(ev)
        elif te.type == pb.TrackEvent.TYPE_COUNTER:
            counters.append({"uuid": uuid, "ts": ts, "value": te.double_counter_value if te.HasField("double_counter_value") else te.counter_value})
    # As Perfetto's trace processor does: events sorted by time (ties in
    # file order), then each end closes the innermost open slice.
    for ev in sorted(marks, key=lambda e: e["ts"]):
        if ev["begin"]:
            open_slices[ev["uuid"]].append(ev)
        else:
            b = open_slices[ev["uuid"]].pop()
            b["dur"] = ev["ts"] - b["ts"]
            b["args"].update(ev["args"])
            slices.append(b)
    unclosed = sum(len(v) for v in open_slices.values())

    by_pid = {t["pid"]: t["name"] for t in tracks.values() if t["kind"] == "process"}

    def process_name(uuid):
        t = tracks[uuid]
        if t["kind"] == "thread":
            return by_pid.get(t["pid"])
        return t["name"]

    def place(uuid):
        """(process name, track name), as Chrome's pid/tid names say."""
        t = tracks[uuid]
        if t["kind"] == "thread":
            return (by_pid.get(t["pid"]), t["name"] if t["name"] is not None else str(t["tid"]))
        if t["kind"] == "process" or t["parent"] is None:
            return (t["name"], "0")
        return (process_name(t["parent"]), t["name"])

    out = {"slices": [], "instants": [], "counters": [], "flows": []}
    for s in slices:
        key = place(s["uuid"]) + (s["ts"], s["name"])
        out["slices"].append(place(s["uuid"]) + (s["ts"], s["dur"], s["name"], s["cat"], canonical_args(s["args"])))
        for fid, term in s.get("flows", []):
            flows[fid]["to" if term else "from"] = key
    for i in instants:
        out["instants"].append(place(i["uuid"]) + (i["ts"], i["name"], i["cat"], canonical_args(i["args"])))
    for c in counters:
        t = tracks[c["uuid"]]
        parent_proc = process_name(t["parent"]) if t["parent"] is not None else None
        out["counters"].append((parent_proc, t["name"], c["ts"], c["value"]))
    for fid, ends in flows.items():
        out["flows"].append((ends.get("from"), ends.get("to")))
    return out, unclosed


def read_chrome(path):
    with open(path) as f:
        evs = json.load(f)["traceEvents"]
    pname, tname = {}, {}
    for e in evs:
        if e["ph"] == "M" and e["name"] == "process_name":
            pname[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            tname[(e["pid"], e["tid"])] = e["args"]["name"]

    def place(e):
        return (pname.get(e["pid"]), tname.get((e["pid"], e["tid"]), str(e["tid"])))

    def ns(us):
        # Exactly, where a double of Unix microseconds times 1000 would not be.
        whole = int(us)
        return whole * 1000 + round((us - whole) * 1000)

    out = {"slices": [], "instants": [], "counters": [], "flows": []}
    open_slices = collections.defaultdict(list)
    flows = collections.defaultdict(dict)
    last_slice = None  # the slice event each flow event follows
    pending = {}  # id(B event) -> canonical key, filled at its E
    for e in evs:
        ph = e["ph"]
        if ph == "B":
            b = dict(e, args=dict(e.get("args", {})))
            open_slices[(e["pid"], e["tid"])].append(b)
            last_slice = b
        elif ph == "E":
            b = open_slices[(e["pid"], e["tid"])].pop()
            b["args"].update(e.get("args", {}))
            out["slices"].append(place(b) + (ns(b["ts"]), ns(e["ts"]) - ns(b["ts"]), b["name"], b.get("cat", ""), canonical_args(b["args"])))
        elif ph == "X":
            out["slices"].append(place(e) + (ns(e["ts"]), ns(e["ts"] + e["dur"]) - ns(e["ts"]), e["name"], e.get("cat", ""), canonical_args(e.get("args", {}))))
            last_slice = e
        elif ph == "i":
            out["instants"].append(place(e) + (ns(e["ts"]), e["name"], e.get("cat", ""), canonical_args(e.get("args", {}))))
        elif ph == "C":
            for k, v in e["args"].items():
                out["counters"].append((pname.get(e["pid"]), e["name"], ns(e["ts"]), float(v)))
        elif ph in "stf":
            key = place(last_slice) + (ns(last_slice["ts"]), last_slice["name"])
            flows[e["id"]]["to" if ph == "f" else "from"] = key
    for fid, ends in flows.items():
        out["flows"].append((ends.get("from"), ends.get("to")))
    return out


def order(record):
    """Sort key: numbers by value, the rest by text. (Sorting by text would
    let the nanosecond that Chrome's microseconds may round away reorder
    the records of a dense trace: 1029107 before 1029107084.)"""
    return tuple((0, x, "") if isinstance(x, int) else (1, 0, repr(x)) for x in record)


def compare(kind, a, b, ts_field, errors):
    a, b = sorted(a, key=order), sorted(b, key=order)
    if len(a) != len(b):
        errors.append(f"{kind}: perfetto has {len(a)}, chrome {len(b)}")
        ca, cb = collections.Counter(map(repr, a)), collections.Counter(map(repr, b))
        errors.extend(f"  only in perfetto: {x}" for x in list((ca - cb).elements())[:5])
        errors.extend(f"  only in chrome:   {x}" for x in list((cb - ca).elements())[:5])
        return
    for x, y in zip(a, b):
        same = all(
            close(p, q) if isinstance(p, int) and isinstance(q, int) and i in ts_field else p == q
            for i, (p, q) in enumerate(zip(x, y))
        )
        if not same:
            errors.append(f"{kind}: perfetto {x} != chrome {y}")
            if len(errors) > 20:
                return


def rebase(t):
    """Times relative to the trace's first one: Chrome JSON may be relative
    where Perfetto carries Unix time (build traces), or both absolute."""
    times = [x[2] for k in ("slices", "instants", "counters") for x in t[k]]
    t0 = min(times) if times else 0
    for k in ("slices", "instants", "counters"):
        t[k] = [x[:2] + (x[2] - t0,) + x[3:] for x in t[k]]
    t["flows"] = [tuple(None if e is None else e[:2] + (e[2] - t0,) + e[3:] for e in f) for f in t["flows"]]
    return t


def main():
    pf, unclosed = read_perfetto(sys.argv[1])
    ch = read_chrome(sys.argv[2])
    pf, ch = rebase(pf), rebase(ch)
    errors = []
    if unclosed:
        errors.append(f"{unclosed} slices never ended in the Perfetto trace")
    compare("slices", pf["slices"], ch["slices"], {2, 3}, errors)
    compare("instants", pf["instants"], ch["instants"], {2}, errors)
    compare("counters", pf["counters"], ch["counters"], {2}, errors)
    norm = lambda fl: [(f, t) for f, t in fl]
    pflows = sorted(map(repr, norm(pf["flows"])))
    cflows = sorted(map(repr, norm(ch["flows"])))
    if pflows != cflows:
        errors.append(f"flows differ: perfetto {len(pflows)}, chrome {len(cflows)}")
        errors.extend(f"  perfetto {x}" for x in sorted(set(pflows) - set(cflows))[:5])
        errors.extend(f"  chrome   {x}" for x in sorted(set(cflows) - set(pflows))[:5])
    print(f"compared {len(pf['slices'])} slices, {len(pf['instants'])} instants, "
          f"{len(pf['counters'])} counter samples, {len(pf['flows'])} flows")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
