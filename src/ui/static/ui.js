// kubesched ui: the state stream (server-sent events), the node grid canvas and the timeline charts.
(function () {
  "use strict";
  if (window.kubeschedUi) { return; }  // htmx's boost swaps the body: set up once
  window.kubeschedUi = true;

  // a page refreshed after a re-simulation may now answer 404 (its node or pod deleted by the edit): show that page
  // instead of keeping the old one on screen (htmx does not swap error responses by default)
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr && event.detail.xhr.status === 404) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // the what-if page's file import: the chosen file's text goes into the form (read here, never uploaded as a file)
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (input.id !== "import-file" || !input.files || !input.files.length) { return; }
    var file = input.files[0];
    file.text().then(function (content) {
      document.getElementById("import-yaml").value = content;
      document.getElementById("import-name").value = file.name;
    });
  });

  var shown = Number(document.body.dataset.version || 0);
  var source = new EventSource("/events");
  source.addEventListener("state", function (event) {
    var state = JSON.parse(event.data);
    var label = document.getElementById("run-status");
    if (label) {
      label.textContent = state.text;
      label.className = state.running ? "running" : (state.error ? "failed" : "");
    }
    if (state.version > shown && !state.running) {
      shown = state.version;
      htmx.trigger(document.body, "resimulated");
    }
  });

  function colour(percent) {
    if (percent < 0) { return "#d8d8d8"; }
    var p = Math.min(percent, 100) / 100;
    var hue = 210 - 210 * p;  // blue (empty) to red (full)
    return "hsl(" + hue + ",65%," + (75 - 30 * p) + "%)";
  }

  function drawGrid(canvas) {
    var data = JSON.parse(document.getElementById("grid-data").textContent);
    var n = data.percent.length;
    var width = canvas.parentElement.clientWidth - 4;
    var cell = n > 2000 ? 7 : n > 500 ? 11 : n > 60 ? 16 : 28;
    var columns = Math.max(1, Math.floor(width / cell));
    canvas.width = Math.min(width, columns * cell);
    canvas.height = Math.max(cell, Math.ceil(n / columns) * cell);
    var ctx = canvas.getContext("2d");
    for (var i = 0; i < n; i++) {
      var x = (i % columns) * cell, y = Math.floor(i / columns) * cell;
      ctx.fillStyle = colour(data.percent[i]);
      ctx.fillRect(x, y, cell - 1, cell - 1);
      if (data.flags[i] & 1) { ctx.strokeStyle = "#222"; ctx.lineWidth = 1; ctx.strokeRect(x + 0.5, y + 0.5, cell - 2, cell - 2); }
      if (data.flags[i] & 2) { ctx.fillStyle = "#222"; ctx.fillRect(x + cell / 2 - 1, y + cell / 2 - 1, 2, 2); }
    }
    function at(event) {
      var rect = canvas.getBoundingClientRect();
      var col = Math.floor((event.clientX - rect.left) / cell), row = Math.floor((event.clientY - rect.top) / cell);
      var i = row * columns + col;
      return col < columns && i >= 0 && i < n ? i : -1;
    }
    canvas.onmousemove = function (event) {
      var i = at(event), tip = document.getElementById("grid-tip");
      if (tip) {
        tip.textContent = i < 0 ? "\u00a0" : data.names[i] + ": " + (data.percent[i] < 0 ? "no " + data.resource :
          data.percent[i] + "% " + data.resource + " requested") + (data.flags[i] & 1 ? ", cordoned" : "") +
          (data.flags[i] & 2 ? ", tainted" : "");
      }
    };
    canvas.onclick = function (event) {
      var i = at(event);
      if (i >= 0) { window.location.href = "/node/" + encodeURIComponent(data.names[i]); }
    };
  }

  var charts = [];
  function drawCharts(box) {
    var data = JSON.parse(document.getElementById("timeline-data").textContent);
    var scrubber = document.getElementById("scrubber");
    box.innerHTML = "";
    charts = [];
    var width = Math.max(400, box.clientWidth - 10);
    var marker = {hooks: {draw: [function (u) {
      var ctx = u.ctx, left, top = u.bbox.top, height = u.bbox.height;
      ctx.save();
      data.marks.forEach(function (m) {
        left = u.valToPos(m[0], "x", true);
        ctx.strokeStyle = m[1].indexOf("preempted") === 0 ? "#c44" : "#888"; ctx.setLineDash([4, 3]);
        ctx.beginPath(); ctx.moveTo(left, top); ctx.lineTo(left, top + height); ctx.stroke();
      });
      left = u.valToPos(Number(scrubber.value), "x", true);
      ctx.setLineDash([]); ctx.strokeStyle = "#000"; ctx.lineWidth = 2;
      ctx.beginPath(); ctx.moveTo(left, top); ctx.lineTo(left, top + height); ctx.stroke();
      ctx.restore();
    }]}};
    var x = data.times.length ? data.times : [0];
    var steps = uPlot.paths.stepped({align: 1});  // a count holds until the next change
    charts.push(new uPlot({title: "Pending pods", width: width, height: 170, scales: {x: {time: false}},
      axes: [{label: "simulated seconds"}, {}], plugins: [marker],
      series: [{label: "t (s)"}, {label: "pending", stroke: "#c44", width: 2, paths: steps}]},
      [x, data.pending.length ? data.pending : [0]], box));
    var names = Object.keys(data.allocated), palette = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756"];
    charts.push(new uPlot({title: "Allocated (% of allocatable)", width: width, height: 190, scales: {x: {time: false}},
      axes: [{label: "simulated seconds"}, {}], plugins: [marker],
      series: [{label: "t (s)"}].concat(names.map(function (r, i) { return {label: r, stroke: palette[i % palette.length], width: 2, paths: steps}; }))},
      [x].concat(names.map(function (r) { return data.allocated[r].length ? data.allocated[r] : [0]; })), box));
    scrubber.addEventListener("input", function () { charts.forEach(function (c) { c.redraw(false); }); });
  }

  htmx.onLoad(function (element) {
    var root = element.querySelector ? element : document;
    var canvas = root.querySelector("#grid") || (element.id === "grid" ? element : null);
    if (canvas) { drawGrid(canvas); }
    var box = root.querySelector("#charts");
    if (box) { drawCharts(box); }
  });
})();
