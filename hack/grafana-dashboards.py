#!/usr/bin/env python3
"""Writes deploy/grafana/*.json, the Grafana dashboards of the manager's metrics.

Two in the spirit of kubebuilder's grafana plugin (controller-runtime-metrics.json,
controller-resources-metrics.json: the same rows, queries and variables, so that a kubebuilder
user finds what they know), one for the series that are ours (math_controller_*).
Run `python3 hack/grafana-dashboards.py` after changing a panel; tests/metrics_dialect.rs checks
that every query's metrics and labels exist in a scrape of a running manager.
"""
import json
import pathlib

SEL = 'job="$job", namespace="$namespace"'
POD_SEL = 'job="$job", namespace="$namespace", pod="$pod"'


def variables(*names):
    """Grafana template variables: the data source, then job, namespace (and pod) from a
    series every manager exports."""
    out = [{
        "name": "DS_PROMETHEUS", "label": "Data source", "type": "datasource",
        "query": "prometheus", "hide": 0,
    }]
    queries = {
        "job": "label_values(controller_runtime_reconcile_total, job)",
        "namespace": 'label_values(controller_runtime_reconcile_total{job="$job"}, namespace)',
        "pod": 'label_values(controller_runtime_reconcile_total{job="$job", namespace="$namespace"}, pod)',
    }
    for name in names:
        out.append({
            "name": name, "label": name, "type": "query", "refresh": 2, "hide": 0,
            "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
            "query": {"query": queries[name], "refId": f"var-{name}"},
            "definition": queries[name], "includeAll": False, "multi": False,
        })
    return {"list": out}


class Layout:
    def __init__(self):
        self.panels, self.y, self.x, self.row_h, self.next_id = [], 0, 0, 0, 1

    def _id(self):
        self.next_id += 1
        return self.next_id - 1

    def row(self, title):
        self._newline()
        self.panels.append({"type": "row", "title": title, "collapsed": False, "id": self._id(),
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def _newline(self):
        if self.x:
            self.y += self.row_h
            self.x, self.row_h = 0, 0

    def panel(self, title, targets, kind="timeseries", unit="short", width=12, description=""):
        if self.x + width > 24:
            self._newline()
        h = 8
        self.panels.append({
            "type": kind, "title": title, "description": description, "id": self._id(),
            "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
            "gridPos": {"h": h, "w": width, "x": self.x, "y": self.y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "table", "placement": "bottom", "showLegend": True}},
            "targets": [
                {"datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
                 "expr": expr, "legendFormat": legend, "refId": chr(ord("A") + i)}
                for i, (expr, legend) in enumerate(targets)
            ],
        })
        self.x += width
        self.row_h = max(self.row_h, h)


def quantiles(metric, by, legend):
    return [(f"histogram_quantile({q}, sum(rate({metric}_bucket{{{SEL}}}[5m])) by ({by}, le))",
             f"P{int(float(q) * 100)} {legend}") for q in ("0.50", "0.90", "0.99")]


def dashboard(uid, title, layout, templating):
    return {
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
                      "pluginId": "prometheus", "pluginName": "Prometheus"}],
        "uid": uid, "title": title, "editable": True, "schemaVersion": 39,
        "time": {"from": "now-15m", "to": "now"}, "refresh": "10s",
        "tags": ["math-controller", "controller-runtime"],
        "templating": templating, "panels": layout.panels,
    }


def runtime():
    l = Layout()
    l.row("Reconciliation Metrics")
    l.panel("Number of workers in use", [(f"controller_runtime_active_workers{{{SEL}}}", "{{controller}} {{instance}}")], kind="gauge", width=4)
    l.panel("Total Reconciliation Count Per Controller", [(f"sum(rate(controller_runtime_reconcile_total{{{SEL}}}[5m])) by (instance, pod, controller)", "{{controller}} {{pod}}")], unit="ops", width=10)
    l.panel("Reconciliation Error Count Per Controller", [(f"sum(rate(controller_runtime_reconcile_errors_total{{{SEL}}}[5m])) by (instance, pod, controller)", "{{controller}} {{pod}}")], unit="ops", width=10)
    l.panel("Reconciliations by result", [(f"sum(rate(controller_runtime_reconcile_total{{{SEL}}}[5m])) by (controller, result)", "{{controller}} {{result}}")], unit="ops")
    l.panel("Seconds per reconciliation (P50, P90, P99)", quantiles("controller_runtime_reconcile_time_seconds", "instance, controller", "{{controller}} {{instance}}"), unit="s")
    l.row("Work Queue Metrics")
    l.panel("WorkQueue Depth", [(f"workqueue_depth{{{SEL}}}", "{{name}} {{instance}}")], kind="gauge", width=4)
    l.panel("Seconds For Items Stay In Queue (before being requested) (P50, P90, P99)", quantiles("workqueue_queue_duration_seconds", "instance, name", "{{name}} {{instance}}"), unit="s", width=10)
    l.panel("Work Queue Add Rate", [(f"sum(rate(workqueue_adds_total{{{SEL}}}[5m])) by (instance, name)", "{{name}} {{instance}}")], unit="ops", width=10)
    l.panel("Unfinished Seconds", [(f"rate(workqueue_unfinished_work_seconds{{{SEL}}}[5m])", "{{name}} {{instance}}")], unit="s", width=8)
    l.panel("Seconds Processing Items From WorkQueue (P50, P90, P99)", quantiles("workqueue_work_duration_seconds", "instance, name", "{{name}} {{instance}}"), unit="s", width=8)
    l.panel("Add Rate Of Retries Handled By WorkQueue", [(f"sum(rate(workqueue_retries_total{{{SEL}}}[5m])) by (instance, name)", "{{name}} {{instance}}")], unit="ops", width=8)
    l.panel("Longest running reconcile", [(f"max(workqueue_longest_running_processor_seconds{{{SEL}}}) by (name)", "{{name}}")], unit="s")
    l.panel("Leader", [(f"max(leader_election_master_status{{{SEL}}}) by (pod, name)", "{{pod}} {{name}}")])
    return dashboard("math-controller-runtime", "Controller-Runtime Metrics", l, variables("job", "namespace"))


def resources():
    l = Layout()
    l.row("Resources")
    l.panel("CPU Usage", [(f"rate(process_cpu_seconds_total{{{POD_SEL}}}[5m]) * 100", "Pod: {{pod}} | Container: {{container}}")], unit="percent")
    l.panel("Memory Usage", [(f"process_resident_memory_bytes{{{POD_SEL}}}", "Pod: {{pod}} | Container: {{container}}")], unit="bytes")
    l.panel("Open file descriptors", [(f"process_open_fds{{{POD_SEL}}}", "{{pod}}")])
    l.panel("Uptime", [(f"time() - process_start_time_seconds{{{POD_SEL}}}", "{{pod}}")], unit="s")
    return dashboard("math-controller-resources", "Controller Resources Metrics", l, variables("job", "namespace", "pod"))


def ours():
    l = Layout()
    l.row("Writes: zero once converged")
    l.panel("Write requests by kind and operation", [(f"sum(rate(math_controller_write_requests_total{{{SEL}}}[5m])) by (kind, operation)", "{{operation}} {{kind}}")], unit="ops")
    l.panel("Write requests by controller", [(f"sum(rate(math_controller_write_requests_total{{{SEL}}}[5m])) by (controller)", "{{controller}}")], unit="ops")
    l.row("Fair queues")
    l.panel("Wait for a turn (P99) by queue", [(f"histogram_quantile(0.99, sum(rate(math_controller_fair_queue_wait_seconds_bucket{{{SEL}}}[5m])) by (queue, le))", "{{queue}}")], unit="s", width=8)
    l.panel("Waiting now by queue", [(f"sum(math_controller_fair_queue_depth{{{SEL}}}) by (queue)", "{{queue}}")], width=8)
    l.panel("Flows (namespaces) waiting", [(f"max(math_controller_fair_queue_flows{{{SEL}}}) by (queue)", "{{queue}}"), (f"max(math_controller_fair_queue_longest_wait_seconds{{{SEL}}}) by (queue)", "longest wait {{queue}}")], width=8)
    l.row("Refusals, errors, memory")
    l.panel("Errors by reason", [(f"sum(rate(math_controller_reconcile_errors_total{{{SEL}}}[5m])) by (controller, reason)", "{{controller}} {{reason}}")], unit="ops", width=8)
    l.panel("Refusals and other remembered entries", [(f"sum(math_controller_remembered_entries{{{SEL}}}) by (memory)", "{{memory}}"), (f'sum(math_controller_remembered_entries{{{SEL}, memory="refusals"}})', "refusals")], width=8)
    l.panel("Throttled (429) and dropped log lines", [(f"sum(rate(math_controller_api_throttled_total{{{SEL}}}[5m]))", "429 answers"), (f"sum(rate(math_controller_log_lines_dropped_total{{{SEL}}}[5m]))", "log lines dropped"), (f"sum(rate(math_controller_replans_put_off_total{{{SEL}}}[5m])) by (controller)", "put off {{controller}}")], unit="ops", width=8)
    l.panel("Version", [(f"math_controller_build_info{{{SEL}}}", "{{pod}} {{version}}")], kind="table", width=24)
    return dashboard("math-controller-ours", "math-controller", l, variables("job", "namespace"))


def main():
    out = pathlib.Path(__file__).resolve().parent.parent / "deploy" / "grafana"
    out.mkdir(exist_ok=True)
    for name, board in [("controller-runtime-metrics.json", runtime()),
                        ("controller-resources-metrics.json", resources()),
                        ("math-controller-metrics.json", ours())]:
        (out / name).write_text(json.dumps(board, indent=2) + "\n")


if __name__ == "__main__":
    main()
