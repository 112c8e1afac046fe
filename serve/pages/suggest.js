// Suggestions for the keyword search box. The form works the same without
// this script; with it, the box offers the keywords GET /v1/suggest answers
// as the person types (a datalist, so the browser draws and navigates it).
(function () {
  "use strict";
  var input = document.querySelector("form.search input[name=q]");
  if (!input || !window.fetch) {
    return;
  }
  var select = document.querySelector("form.search select[name=country]");
  var list = document.createElement("datalist");
  list.id = "kw-suggestions";
  document.body.appendChild(list);
  input.setAttribute("list", list.id);
  input.setAttribute("autocomplete", "off");
  var timer = 0;
  var last = "";
  // 150 ms after the last key stroke: well below the 10 requests a second
  // a client may make.
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(suggest, 150);
  });
  function suggest() {
    var q = input.value.trim();
    var cc = (select ? select.value : "us").toLowerCase();
    var key = cc + " " + q;
    if (q.length < 2 || key === last) {
      return;
    }
    last = key;
    fetch("/v1/suggest?q=" + encodeURIComponent(q) + "&country=" + encodeURIComponent(cc))
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (!d || key !== last) {
          return;
        }
        list.textContent = "";
        d.suggestions.forEach(function (k) {
          var o = document.createElement("option");
          o.value = k;
          list.appendChild(o);
        });
        input.setAttribute("data-suggested", String(d.suggestions.length));
      })
      .catch(function () {});
  }
})();
