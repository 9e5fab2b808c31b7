#!/usr/bin/env python3
"""Writes deploy/grafana/*.json, the Grafana dashboards of the manager's metrics.

Two are kubebuilder's, as its grafana plugin (kubebuilder v4, `grafana.kubebuilder.io/v1-alpha`)
writes them into a project's grafana/ folder: controller-runtime-metrics.json and
controller-resources-metrics.json, rebuilt here from that plugin's panels, queries, variables
and panel styles, so that a kubebuilder user imports the dashboards they know and sees this
manager in them. The third is ours, for the math_controller_* series.

Run `python3 hack/grafana-dashboards.py` after changing a panel. tests/metrics_dashboards.rs
evaluates every query of the three against scrapes of a running manager (with the labels
Prometheus adds to a target) and fails on a query that returns no series.
"""
import json
import pathlib
import sys

SEL = 'job="$job", namespace="$namespace"'
POD_SEL = 'job="$job", namespace="$namespace", pod="$pod"'
DS = "${DS_PROMETHEUS}"


# ---------------------------------------------------------------------------------------------
# kubebuilder's dashboards: the plugin's dashboard frame, panel styles, panels and variables.

def kubebuilder_frame(title, panels, templating, annotation_datasource):
    return {
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "description": "",
                      "type": "datasource", "pluginId": "prometheus", "pluginName": "Prometheus"}],
        "__requires": [{"type": "datasource", "id": "prometheus", "name": "Prometheus",
                        "version": "1.0.0"}],
        "annotations": {"list": [{
            "builtIn": 1, "datasource": annotation_datasource, "enable": True, "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
            "target": {"limit": 100, "matchAny": False, "tags": [], "type": "dashboard"},
            "type": "dashboard",
        }]},
        "editable": True, "fiscalYearStartMonth": 0, "graphTooltip": 0, "links": [],
        "liveNow": False, "panels": panels, "refresh": "", "style": "dark", "tags": [],
        "templating": {"list": templating}, "time": {"from": "now-15m", "to": "now"},
        "timepicker": {}, "timezone": "", "title": title, "weekStart": "",
    }


def kubebuilder_variables(pod_current):
    """job, namespace and pod, each from controller_runtime_reconcile_total."""
    def var(name, query, refresh, **more):
        return {"datasource": DS, "definition": query, "hide": 0, "includeAll": False,
                "multi": False, "name": name, "options": [],
                "query": {"query": query, "refId": "StandardVariableQuery"},
                "refresh": refresh, "regex": "", "skipUrlSync": False, "sort": 0,
                "type": "query", **more}
    job = var("job", 'label_values(controller_runtime_reconcile_total{namespace=~"$namespace"}, job)', 2)
    namespace = var("namespace", "label_values(controller_runtime_reconcile_total, namespace)", 1)
    pod = var("pod", 'label_values(controller_runtime_reconcile_total{namespace=~"$namespace", job=~"$job"}, pod)', 2,
              current=pod_current, hide=2, includeAll=True, label="pod", multi=True)
    return [job, namespace, pod]


THRESHOLDS_80 = {"mode": "absolute", "steps": [{"color": "green", "value": None},
                                               {"color": "red", "value": 80}]}
THRESHOLDS_GAUGE = {"mode": "percentage", "steps": [{"color": "green", "value": None},
                                                    {"color": "orange", "value": 70},
                                                    {"color": "red", "value": 85}]}
HIDE_FROM = {"legend": False, "tooltip": False, "viz": False}


def series_custom(fill, gradient, interpolation, width, stacking, axis_extras=True):
    custom = {
        "axisLabel": "", "axisPlacement": "auto", "barAlignment": 0, "drawStyle": "line",
        "fillOpacity": fill, "gradientMode": gradient, "hideFrom": HIDE_FROM,
        "lineInterpolation": interpolation, "lineWidth": width, "pointSize": 5,
        "scaleDistribution": {"type": "linear"}, "showPoints": "auto", "spanNulls": False,
        "stacking": {"group": "A", "mode": stacking}, "thresholdsStyle": {"mode": "off"},
    }
    if axis_extras:
        custom.update({"axisCenteredZero": False, "axisColorMode": "text"})
    return custom


def rate_style(unit, axis_extras=True):
    """The plugin's rate panels: a smooth, thick green-to-red line."""
    return {"color": {"mode": "continuous-GrYlRd"},
            "custom": series_custom(20, "scheme", "smooth", 3, "none", axis_extras),
            "mappings": [], "thresholds": THRESHOLDS_80, "unit": unit}


def quantile_style(stacking):
    """The plugin's P50/P90/P99 panels."""
    return {"color": {"mode": "palette-classic"},
            "custom": series_custom(10, "none", "linear", 1, stacking),
            "mappings": [], "thresholds": THRESHOLDS_80, "unit": "s"}


def target(expr, legend, ref="A", **more):
    t = {"datasource": DS, "exemplar": True, "expr": expr, "interval": "", "legendFormat": legend,
         "refId": ref}
    t.update(more)
    return t


def quantile_targets(metric, legend):
    return [target(f"histogram_quantile({q}, sum(rate({metric}_bucket{{{SEL}}}[5m])) by (instance, name, le))",
                   f"P{q[2:]} {legend} ", ref, **({} if ref == "A" else {"hide": False}))
            for q, ref in (("0.50", "A"), ("0.90", "B"), ("0.99", "C"))]


def row(title, id_, y):
    return {"collapsed": False, "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "id": id_,
            "panels": [], "title": title, "type": "row"}


def gauge(title, id_, pos, targets, unit=None, description=None):
    defaults = {"mappings": [], "thresholds": THRESHOLDS_GAUGE}
    if unit:
        defaults["unit"] = unit
    p = {"datasource": DS, "fieldConfig": {"defaults": defaults, "overrides": []},
         "gridPos": pos, "id": id_,
         "options": {"orientation": "auto",
                     "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                     "showThresholdLabels": False, "showThresholdMarkers": True},
         "pluginVersion": "9.5.3", "targets": targets, "title": title, "type": "gauge"}
    if description:
        p["description"] = description
    return p


def timeseries(title, id_, pos, targets, style, legend_calcs=(), description=None, **more):
    p = {"datasource": DS, "fieldConfig": {"defaults": style, "overrides": []},
         "gridPos": pos, "id": id_,
         "options": {"legend": {"calcs": list(legend_calcs), "displayMode": "table",
                                "placement": "bottom", "showLegend": True},
                     "tooltip": {"mode": "single", "sort": "none"}},
         "targets": targets, "title": title, "type": "timeseries"}
    if description:
        p["description"] = description
    p.update(more)
    return p


def pos(h, w, x, y):
    return {"h": h, "w": w, "x": x, "y": y}


UNFINISHED = ("How many seconds of work has done that is in progress and hasn't been observed by "
              "work_duration.\nLarge values indicate stuck threads.\nOne can deduce the number of "
              "stuck threads by observing the rate at which this increases.")


def runtime():
    """kubebuilder's controller-runtime-metrics.json."""
    panels = [
        row("Reconciliation Metrics", 9, 0),
        gauge("Number of workers in use", 24, pos(8, 3, 0, 1),
              [target(f"controller_runtime_active_workers{{{SEL}}}", "{{controller}} {{instance}}")]),
        timeseries("Total Reconciliation Count Per Controller", 7, pos(8, 11, 3, 1),
                   [target(f"sum(rate(controller_runtime_reconcile_total{{{SEL}}}[5m])) by (instance, pod)",
                           "{{instance}} {{pod}}", editorMode="code", range=True)],
                   rate_style("cpm"), description="Total number of reconciliations per controller"),
        timeseries("Reconciliation Error Count Per Controller", 6, pos(8, 10, 14, 1),
                   [target(f"sum(rate(controller_runtime_reconcile_errors_total{{{SEL}}}[5m])) by (instance, pod)",
                           "{{instance}} {{pod}}", editorMode="code", range=True)],
                   rate_style("cpm"), description="Total number of reconciliation errors per controller"),
        row("Work Queue Metrics", 11, 9),
        gauge("WorkQueue Depth", 22, pos(8, 3, 0, 10), [target(f"workqueue_depth{{{SEL}}}", "")]),
        timeseries("Seconds For Items Stay In Queue (before being requested) (P50, P90, P99)", 13,
                   pos(8, 11, 3, 10),
                   quantile_targets("workqueue_queue_duration_seconds", "{{name}} {{instance}}"),
                   quantile_style("normal"), legend_calcs=("max", "mean"),
                   description="How long in seconds an item stays in workqueue before being requested"),
        timeseries("Work Queue Add Rate", 15, pos(8, 10, 14, 10),
                   [target(f"sum(rate(workqueue_adds_total{{{SEL}}}[5m])) by (instance, name)",
                           "{{name}} {{instance}}")],
                   rate_style("ops"), pluginVersion="8.4.3"),
        gauge("Unfinished Seconds", 23, pos(9, 3, 0, 18),
              [target(f"rate(workqueue_unfinished_work_seconds{{{SEL}}}[5m])", "")],
              unit="s", description=UNFINISHED),
        timeseries("Seconds Processing Items From WorkQueue (P50, P90, P99)", 19, pos(9, 11, 3, 18),
                   quantile_targets("workqueue_work_duration_seconds", "{{name}} {{instance}}"),
                   quantile_style("none"), legend_calcs=("max", "mean"),
                   description="How long in seconds processing an item from workqueue takes."),
        timeseries("Work Queue Retries Rate", 17, pos(9, 10, 14, 18),
                   [target(f"sum(rate(workqueue_retries_total{{{SEL}}}[5m])) by (instance, name)",
                           "{{name}} {{instance}} ")],
                   rate_style("ops"), description="Total number of retries handled by workqueue"),
    ]
    pod = {"selected": True, "text": ["All"], "value": ["$__all"]}
    return kubebuilder_frame("Controller-Runtime-Metrics", panels, kubebuilder_variables(pod),
                             {"type": "datasource", "uid": "grafana"})


def resources():
    """kubebuilder's controller-resources-metrics.json."""
    def usage(title, id_, x, expr, unit):
        t = target(expr, "Pod: {{pod}} | Container: {{container}}", format="time_series",
                   intervalFactor=2, step=10)
        p = timeseries(title, id_, pos(8, 12, x, 0), [t], rate_style(unit, axis_extras=False),
                       interval="1m", links=[], pluginVersion="8.4.3")
        p["options"]["legend"] = {"calcs": [], "displayMode": "list", "placement": "bottom"}
        return p
    panels = [
        usage("Controller CPU Usage", 2, 0,
              f"rate(process_cpu_seconds_total{{{POD_SEL}}}[5m]) * 100", "percent"),
        usage("Controller Memory Usage", 4, 12, f"process_resident_memory_bytes{{{POD_SEL}}}", "bytes"),
    ]
    variables = kubebuilder_variables({"selected": False, "text": "All", "value": "$__all"})
    variables[1]["current"] = {"selected": False, "text": "observability", "value": "observability"}
    return kubebuilder_frame("Controller-Resources-Metrics", panels, variables, "-- Grafana --")


# ---------------------------------------------------------------------------------------------
# Ours: the math_controller_* series.

def our_variables():
    out = [{"name": "DS_PROMETHEUS", "label": "Data source", "type": "datasource",
            "query": "prometheus", "hide": 0}]
    queries = {
        "job": "label_values(math_controller_build_info, job)",
        "namespace": 'label_values(math_controller_build_info{job="$job"}, namespace)',
    }
    for name, query in queries.items():
        out.append({
            "name": name, "label": name, "type": "query", "refresh": 2, "hide": 0,
            "datasource": {"type": "prometheus", "uid": DS},
            "query": {"query": query, "refId": f"var-{name}"},
            "definition": query, "includeAll": False, "multi": False,
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

    def panel(self, title, targets, kind="timeseries", unit="short", width=12):
        if self.x + width > 24:
            self._newline()
        h = 8
        self.panels.append({
            "type": kind, "title": title, "id": self._id(),
            "datasource": {"type": "prometheus", "uid": DS},
            "gridPos": {"h": h, "w": width, "x": self.x, "y": self.y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "table", "placement": "bottom", "showLegend": True}},
            "targets": [
                {"datasource": {"type": "prometheus", "uid": DS},
                 "expr": expr, "legendFormat": legend, "refId": chr(ord("A") + i)}
                for i, (expr, legend) in enumerate(targets)
            ],
        })
        self.x += width
        self.row_h = max(self.row_h, h)


def ours():
    l = Layout()
    l.row("Reconciles: where they left the status")
    l.panel("Reconciles by status progress", [(f"sum(rate(math_controller_reconcile_progress_total{{{SEL}}}[5m])) by (controller, progress)", "{{controller}} {{progress}}")], unit="ops")
    l.panel("Errors by reason", [(f"sum(rate(math_controller_reconcile_errors_total{{{SEL}}}[5m])) by (controller, reason)", "{{controller}} {{reason}}")], unit="ops")
    l.row("Writes: zero once converged")
    l.panel("Write requests by kind and operation", [(f"sum(rate(math_controller_write_requests_total{{{SEL}}}[5m])) by (kind, operation)", "{{operation}} {{kind}}")], unit="ops")
    l.panel("API requests by code and method", [(f"sum(rate(rest_client_requests_total{{{SEL}}}[5m])) by (code, method)", "{{method}} {{code}}")], unit="ops")
    l.row("Fair queues")
    l.panel("Wait for a turn (P99) by queue", [(f"histogram_quantile(0.99, sum(rate(math_controller_fair_queue_wait_seconds_bucket{{{SEL}}}[5m])) by (queue, le))", "{{queue}}")], unit="s", width=8)
    l.panel("Waiting now by queue", [(f"sum(math_controller_fair_queue_depth{{{SEL}}}) by (queue)", "{{queue}}")], width=8)
    l.panel("Flows (namespaces) waiting", [(f"max(math_controller_fair_queue_flows{{{SEL}}}) by (queue)", "{{queue}}"), (f"max(math_controller_fair_queue_longest_wait_seconds{{{SEL}}}) by (queue)", "longest wait {{queue}}")], width=8)
    l.row("Memory, throttling, log lines")
    l.panel("Remembered entries", [(f"sum(math_controller_remembered_entries{{{SEL}}}) by (memory)", "{{memory}}")], width=8)
    l.panel("Throttled (429) and dropped log lines", [(f"sum(rate(math_controller_api_throttled_total{{{SEL}}}[5m]))", "429 answers"), (f"sum(rate(math_controller_log_lines_dropped_total{{{SEL}}}[5m]))", "log lines dropped")], unit="ops", width=8)
    l.panel("Replans put off", [(f"sum(rate(math_controller_replans_put_off_total{{{SEL}}}[5m])) by (controller)", "{{controller}}")], unit="ops", width=8)
    l.panel("Version", [(f"math_controller_build_info{{{SEL}}}", "{{pod}} {{version}}")], kind="table", width=24)
    return {
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
                      "pluginId": "prometheus", "pluginName": "Prometheus"}],
        "uid": "math-controller-ours", "title": "math-controller", "editable": True,
        "schemaVersion": 39, "time": {"from": "now-15m", "to": "now"}, "refresh": "10s",
        "tags": ["math-controller"], "templating": our_variables(), "panels": l.panels,
    }


def main():
    # `--out DIR` writes elsewhere (tests/metrics_dashboards.rs compares with deploy/grafana/).
    out = pathlib.Path(__file__).resolve().parent.parent / "deploy" / "grafana"
    if len(sys.argv) == 3 and sys.argv[1] == "--out":
        out = pathlib.Path(sys.argv[2])
    out.mkdir(exist_ok=True)
    for name, board in [("controller-runtime-metrics.json", runtime()),
                        ("controller-resources-metrics.json", resources()),
                        ("math-controller-metrics.json", ours())]:
        (out / name).write_text(json.dumps(board, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
