//! The page's own style and script, inline (the page loads nothing: its Content-Security-Policy
//! forbids every fetch). The script only adds behaviour: the drawings and tables are complete
//! without it.

/// `<head>` up to the title, with the policy that keeps the page offline.
pub fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"generator\" content=\"dumpshell report\">\
<title>{}</title><style>{CSS}</style></head>",
        crate::html::esc(title)
    )
}

pub const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--accent:#0969da;
--mono:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,"Liberation Mono",monospace;
--sans:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans","Liberation Sans",sans-serif}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 var(--sans)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
header.top{background:#24292f;color:#fff;padding:14px 24px 0;position:sticky;top:0;z-index:5}
header.top h1{margin:0;font-size:18px;font-weight:600}
header.top h1 small{font-weight:400;color:#c9d1d9;margin-left:8px;font-family:var(--mono);font-size:14px}
header.top nav{display:flex;flex-wrap:wrap;gap:2px;margin-top:10px}
header.top nav a{color:#c9d1d9;padding:6px 10px;border-radius:6px 6px 0 0;font-size:13px}
header.top nav a:hover{background:#32383f;color:#fff;text-decoration:none}
main{padding:16px 24px 40px;max-width:100%}
.sec{background:var(--card);border:1px solid var(--line);border-radius:8px;margin:0 0 18px;padding:14px 18px 16px;scroll-margin-top:90px}
.sec>h2{margin:0 0 10px;font-size:17px;display:flex;align-items:baseline;gap:10px}
.sec>h2 .src{font:12px var(--mono);color:var(--muted);font-weight:400}
h3{font-size:14px;margin:18px 0 6px}
.lead{margin:2px 0 10px}.lead.bad{color:#a40e26;font-weight:600}
.note{color:var(--muted);font-size:13px;margin:6px 0}
.failed{background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:8px 10px;font-size:13px}
.missing{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px;font-size:13px;margin:0 0 16px}
.muted{color:var(--muted)}.small{font-size:12px}.mono{font-family:var(--mono);font-size:12.5px}
code{font-family:var(--mono);font-size:12.5px;background:#eff2f5;padding:1px 4px;border-radius:4px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;margin:0 0 12px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
ul.verdicts{list-style:none;padding:0;margin:0}
ul.verdicts>li{padding:7px 10px;border-left:4px solid var(--line);margin:0 0 6px;background:#f6f8fa;border-radius:0 6px 6px 0}
ul.verdicts ul{margin:4px 0 0;padding-left:20px}
ul.verdicts ul li{margin:2px 0}
.badge{display:inline-block;text-decoration:none!important;font:700 11px/1 var(--sans);letter-spacing:.04em;padding:4px 7px;border-radius:10px;background:#59636e;color:#fff;margin-right:4px;vertical-align:1px}
.v-crash,.v-deadlock{border-left-color:#cf222e!important}.v-crash .badge,.v-deadlock .badge{background:#cf222e}
.v-exc{border-left-color:#bc4c00!important}.v-exc .badge{background:#bc4c00}
.v-starved{border-left-color:#9a6700!important}.v-starved .badge{background:#9a6700}
.v-wait{border-left-color:#0969da!important}.v-wait .badge{background:#0969da}
.v-ok{border-left-color:#1a7f37!important}.v-ok .badge{background:#1a7f37}
.v-stacks .badge{background:#6e7781}
.toolbar{display:flex;gap:10px;align-items:center;margin:0 0 8px;flex-wrap:wrap}
.toolbar input[type=search]{font:13px var(--sans);padding:5px 8px;border:1px solid var(--line);border-radius:6px;min-width:260px}
.toolbar label{font-size:13px;color:var(--muted)}
.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12px;color:var(--muted);margin:0 0 8px}
.legend i{display:inline-block;width:26px;height:0;border-top:2px solid;vertical-align:middle;margin-right:5px}
.legend b{display:inline-block;width:14px;height:11px;border:1.5px solid;border-radius:3px;vertical-align:-1px;margin-right:5px}
.scroll{overflow:auto;max-width:100%;border:1px solid #eaeef2;border-radius:6px;background:#fbfcfd}
.scroll.fit svg{max-width:100%;height:auto}
table.grid{border-collapse:collapse;width:100%;font-size:13px}
table.grid th{text-align:left;font-weight:600;color:var(--muted);border-bottom:1px solid var(--line);padding:5px 8px;white-space:nowrap}
table.grid td{border-bottom:1px solid #eaeef2;padding:4px 8px;vertical-align:top}
table.grid td.type{word-break:break-all}
table.grid.small td{font-size:12px}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.bar-col{width:24%;white-space:nowrap}.bar-col small{color:var(--muted);margin-left:6px}
.bar{display:inline-block;width:calc(100% - 56px);height:10px;background:#eaeef2;border-radius:5px;overflow:hidden;vertical-align:middle}
.bar span{display:block;height:100%;background:linear-gradient(90deg,#54aeff,#0969da)}
.bar.wide{width:100%;height:12px;margin:4px 0 8px}
.kpis{display:flex;flex-wrap:wrap;gap:10px;margin:4px 0 8px}
.kpi{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:120px}
.kpi .k{font-size:12px;color:var(--muted)}.kpi .v{font-size:17px;font-weight:600}
.banner{padding:8px 12px;border-radius:6px;font-weight:600}.banner.bad{background:#ffebe9;color:#a40e26;border:1px solid #ff8182}
.exc{border:1px solid var(--line);border-left:4px solid #cf222e;border-radius:6px;padding:8px 12px;margin:0 0 10px}
.exc.inner{margin-left:24px;border-left-color:#bc4c00}
.exc-head{font-size:14px}
ol.trace{margin:6px 0 2px;padding-left:26px}ol.trace li{margin:1px 0}ol.trace li.app{font-weight:600}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px 8px;border-radius:6px}
details.more,details.ids,details.problems{margin:8px 0 0}
details>summary{cursor:pointer;color:var(--accent);font-size:13px}
.ids-list{word-break:break-all}
.hide{display:none!important}
/* parallel stacks */
svg text{font-family:var(--mono);font-size:12px}
.ps-frame{fill:#fff;stroke:#7f9cc4;stroke-width:1.2}
.ps-head{fill:#dbe7f7}
.ps-count{font-family:var(--sans)!important;font-weight:700;fill:#1b3a63}
.ps-fr{fill:#59636e}.ps-fr.app{fill:#0b2f5e;font-weight:600}.ps-fr.elided{fill:#8c959f;font-style:italic}
.ps-box{cursor:pointer}.ps-box:hover .ps-frame,.ps-box:focus .ps-frame,.ps-box.open .ps-frame{stroke:#0969da;stroke-width:2.2}
.ps-box.hot .ps-frame{stroke:#c69026;stroke-width:2.2}.ps-box.hot .ps-head{fill:#fff0b3}
.ps-box.match .ps-frame{stroke:#1a7f37;stroke-width:2.6}
svg.filtering .ps-box:not(.match){opacity:.28}
.ps-more .ps-frame{stroke-dasharray:4 3;fill:#f6f8fa}
.ps-edge{fill:none;stroke:#8ea3bf}.ps-edge.stub{stroke-dasharray:4 3}.ps-edge.lit{stroke:#0969da}
.mk-ps{fill:#8ea3bf}
.pop{position:absolute;z-index:10;background:#fff;border:1px solid #8ea3bf;box-shadow:0 6px 20px rgba(0,0,0,.18);border-radius:6px;padding:8px 10px;max-width:520px;max-height:320px;overflow:auto;font-size:12px}
.pop h4{margin:0 0 4px;font-size:13px}.pop .ids-list{font-family:var(--mono)}
/* async chains */
.chain-cols{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
figure.chain-col{margin:0;border:1px solid #eaeef2;border-radius:8px;padding:6px 6px 8px;background:#fbfcfd;max-width:520px}
figure.chain-col figcaption{font-size:12px;color:var(--muted);padding:2px 6px 0 30px;max-width:480px}
.ch-head{font-family:var(--sans)!important;font-weight:700;fill:#1f2328;font-size:13px!important}
.ch-head.many{fill:#0550ae}
.ch-box rect{fill:#fff;stroke:#7f9cc4;stroke-width:1.2}.ch-box.app .ch-m{fill:#0b2f5e;font-weight:600}
.ch-box.elided rect{stroke-dasharray:4 3}.ch-box.elided .ch-m{fill:#8c959f;font-style:italic}
.ch-m{fill:#1f2328}.ch-s{fill:#59636e;font-size:10.5px!important}.ch-t{fill:#1f2328;font-weight:600}
.ch-cause rect{stroke-width:1.5}
.ch-ctitle{font-weight:700}.ch-cdetail{font-size:10.5px!important;fill:#424a53}
.ch-edge{fill:none;stroke:#8ea3bf;stroke-width:1.5}.ch-edge.blocked{stroke:#bc4c00;stroke-width:1.8}
.ch-edge.runs{stroke:#1a7f37;stroke-dasharray:5 3}.ch-edge.cycle{stroke:#cf222e;stroke-width:1.8}
.mk-ch{fill:#6e7f96}.mk-ch-blocked{fill:#bc4c00}
.ch-thread rect{fill:#fff8f2;stroke:#bc4c00;stroke-width:1.3}.ch-thread.runs rect{fill:#effaf1;stroke:#1a7f37}
.edge-label{font-family:var(--sans)!important;font-size:10.5px!important;fill:#59636e;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
.edge-label.cycle{fill:#cf222e}
/* causality graph */
.g-node rect{fill:#fff;stroke:#6e7781;stroke-width:1.3}
.g-node.n-thread rect{fill:#fff8f2;stroke:#bc4c00}
.g-node.n-chain rect{fill:#f0f6ff;stroke:#0969da}
.g-node.n-lock rect{fill:#fbefff;stroke:#8250df;stroke-width:1.6}
/* cause colours (chains and graph) */
.cz-task-completion-source rect{fill:#ffebe9;stroke:#cf222e}
.cz-semaphore rect{fill:#fff8c5;stroke:#9a6700}
.cz-delay rect,.cz-periodic-timer rect{fill:#ddf4ff;stroke:#0969da}
.cz-channel rect{fill:#fbefff;stroke:#8250df}
.cz-queued rect{fill:#fff1e5;stroke:#bc4c00}
.cz-cycle rect{fill:#ffebe9;stroke:#a40e26;stroke-width:2.2}
.cz-running rect,.cz-running-on-thread rect{fill:#dafbe1;stroke:#1a7f37}
.cz-completed-not-resumed rect{fill:#eaeef2;stroke:#59636e}
.cz-other rect,.cz-unknown rect,.cz-not-read rect{fill:#f6f8fa;stroke:#6e7781}
.g-node.deadlock rect{fill:#ffebe9;stroke:#cf222e;stroke-width:2.4}
.g-t{font-weight:700;fill:#1f2328}.g-s{fill:#59636e;font-size:10.5px!important}
.layer-title{font-family:var(--sans)!important;font-weight:700;fill:#59636e;font-size:12px!important;text-transform:uppercase;letter-spacing:.05em}
.g-edge{fill:none;stroke-width:1.6}
path.e-waits{stroke:#bc4c00}path.e-mwait{stroke:#bc4c00;stroke-dasharray:5 3}
path.e-owns{stroke:#8250df;stroke-width:2.2}path.e-runs{stroke:#1a7f37}path.e-awaits{stroke:#0969da}
path.e-deadlock{stroke:#cf222e;stroke-width:2.6}
text.edge-label.e-waits,text.edge-label.e-mwait{fill:#bc4c00;stroke:#fff;stroke-dasharray:none}
text.edge-label.e-owns{fill:#8250df;stroke:#fff}text.edge-label.e-runs{fill:#1a7f37;stroke:#fff}
text.edge-label.e-awaits{fill:#0969da;stroke:#fff}text.edge-label.e-deadlock{fill:#cf222e;stroke:#fff;stroke-width:3px}
.mk-waits,.mk-mwait{fill:#bc4c00}.mk-owns{fill:#8250df}.mk-runs{fill:#1a7f37}.mk-awaits{fill:#0969da}.mk-deadlock{fill:#cf222e}
.g-more{font-family:var(--sans)!important;fill:#59636e}
svg.focus .g-node,svg.focus .g-edge,svg.focus text.edge-label{opacity:.18}
svg.focus .lit{opacity:1!important}
svg.ring{display:block;margin:4px 0}
.rings{display:flex;flex-wrap:wrap;gap:12px}
/* multi-dump page */
.buckets td.sig{font-family:var(--mono);font-size:12.5px;word-break:break-word}
article.dump{border-top:3px solid #24292f;margin-top:26px;padding-top:6px}
article.dump>h1{font-size:19px;margin:6px 0 12px;font-family:var(--mono)}
article.dump>nav{margin:-6px 0 12px;font-size:13px}article.dump>nav a{margin-right:12px}
footer{color:var(--muted);font-size:12px;padding:0 24px 24px}
/* one section alone: page.html#pstacks */
body:has(.sec:target) .sec:not(:target),body:has(.sec:target) header.top nav,
body:has(.sec:target) .missing,body:has(.sec:target) footer,body:has(.sec:target) .index:not(:has(.sec:target)),
body:has(.sec:target) article.dump:not(:has(.sec:target)),body:has(.sec:target) article.dump>nav{display:none}
body:has(.sec:target) header.top{position:static}
@media print{
 header.top{position:static;background:#fff;color:#000;border-bottom:2px solid #000}
 header.top h1 small{color:#333}header.top nav,.toolbar,footer{display:none}
 body{background:#fff}.sec{break-inside:auto;border:none;padding:0;margin-bottom:24px}
 .sec>h2{break-after:avoid}.scroll{overflow:visible;border:none}
 .ps-box,.g-node,figure.chain-col,tr{break-inside:avoid}
 .scroll svg{max-width:100%;height:auto}
}
"#;

/// Expand/collapse of a box's ids, hover highlights, filters, opening every expander before
/// printing; with `?selfcheck` in the URL it writes what it counted into `<pre id=selfcheck>`
/// (the headless browser test reads it).
pub const JS: &str = r#"
(function(){
"use strict";
var d=document;
function all(s,r){return Array.prototype.slice.call((r||d).querySelectorAll(s));}
// filters
all('input.filter').forEach(function(inp){
  inp.addEventListener('input',function(){
    var q=inp.value.trim().toLowerCase();
    all(inp.dataset.filter).forEach(function(el){
      var s=el.getAttribute('data-search')||el.textContent.toLowerCase();
      el.classList.toggle('hide',q!==''&&s.indexOf(q)<0);
    });
  });
});
all('input.ps-filter').forEach(function(inp){
  inp.addEventListener('input',function(){
    var svg=d.getElementById(inp.dataset.svg);if(!svg)return;
    var q=inp.value.trim().toLowerCase();
    svg.classList.toggle('filtering',q!=='');
    all('.ps-box',svg).forEach(function(g){
      g.classList.toggle('match',q!==''&&g.textContent.toLowerCase().indexOf(q)>=0);
    });
  });
});
all('input.fit-toggle').forEach(function(c){
  c.addEventListener('change',function(){var s=d.getElementById(c.dataset.target);if(s)s.classList.toggle('fit',c.checked);});
});
// a box's ids in a popup
var pop=null;
function closePop(){if(pop){pop.remove();pop=null;}all('.ps-box.open').forEach(function(g){g.classList.remove('open');});}
function openBox(g){
  var svg=g.ownerSVGElement;var pre=svg.id.replace(/svg$/,'');
  var row=d.getElementById(pre+'t'+g.getAttribute('data-box'));if(!row)return;
  closePop();g.classList.add('open');
  pop=d.createElement('div');pop.className='pop';
  var h=d.createElement('h4');h.textContent=g.querySelector('.ps-count').textContent;pop.appendChild(h);
  var l=d.createElement('div');l.className='ids-list';l.textContent=row.cells[3].textContent;pop.appendChild(l);
  var r=g.getBoundingClientRect();
  pop.style.left=(window.scrollX+r.left)+'px';pop.style.top=(window.scrollY+r.bottom+4)+'px';
  d.body.appendChild(pop);
}
d.addEventListener('click',function(ev){
  var g=ev.target.closest&&ev.target.closest('.ps-box');
  if(g){if(g.classList.contains('open'))closePop();else openBox(g);ev.stopPropagation();return;}
  if(pop&&!pop.contains(ev.target))closePop();
});
d.addEventListener('keydown',function(ev){
  if(ev.key==='Escape')closePop();
  if((ev.key==='Enter'||ev.key===' ')&&ev.target.classList&&ev.target.classList.contains('ps-box')){ev.preventDefault();openBox(ev.target);}
});
// hover: a box's edges; a graph node's neighbourhood
function lightEdges(svg,n,on,attrFrom,attrTo){
  all('[data-from]',svg).forEach(function(e){
    if(e.getAttribute('data-from')===n||e.getAttribute('data-to')===n){
      e.classList.toggle('lit',on);
      if(attrFrom){var o=e.getAttribute('data-from')===n?e.getAttribute('data-to'):e.getAttribute('data-from');
        var nn=svg.querySelector('['+attrFrom+'="'+o+'"]');if(nn)nn.classList.toggle('lit',on);}
    }
  });
}
all('svg.pstacks .ps-box').forEach(function(g){
  var svg=g.ownerSVGElement,n=g.getAttribute('data-box');
  g.addEventListener('mouseenter',function(){lightEdges(svg,n,true);});
  g.addEventListener('mouseleave',function(){lightEdges(svg,n,false);});
});
all('svg.graph .g-node').forEach(function(g){
  var svg=g.ownerSVGElement,n=g.getAttribute('data-n');
  g.addEventListener('mouseenter',function(){svg.classList.add('focus');g.classList.add('lit');lightEdges(svg,n,true,'data-n');});
  g.addEventListener('mouseleave',function(){svg.classList.remove('focus');all('.lit',svg).forEach(function(x){x.classList.remove('lit');});});
});
window.addEventListener('beforeprint',function(){all('details').forEach(function(x){x.open=true;});});
// self check for tests
if(/[?&]selfcheck\b/.test(location.search)){
  var c={};
  function n(k,s){c[k]=all(s).length;}
  n('sections','section.sec');n('ps_boxes','svg.pstacks .ps-box');n('ps_edges','svg.pstacks .ps-edge:not(.stub)');
  n('ps_more','svg.pstacks .ps-more');n('chain_cols','figure.chain-col');n('chain_boxes','figure.chain-col .ch-box:not(.elided)');
  n('chain_threads','figure.chain-col .ch-thread');n('graph_nodes','svg.graph .g-node');n('graph_edges','svg.graph .g-edge');
  n('heap_rows','tr.heap-row');n('exc_rows','tr.exc-row');n('sb_rows','tr.sb-row');n('wait_rows','tr.wait-row');
  n('thread_rows','tr.thread-row');n('tp_rows','tr.tp-row');n('rings','svg.ring');n('failed','.failed');n('dumps','article.dump');
  n('bucket_rows','tr.bucket-row');
  var chains=0;all('figure.chain-col').forEach(function(f){chains+=+f.getAttribute('data-count');});c.chains=chains;
  // text wider than the room the layout gave it
  var over=[];
  all('text.fit').forEach(function(t){
    if(!t.getClientRects().length)return;
    var w=+t.getAttribute('data-w');var l=t.getComputedTextLength();
    if(w>0&&l>w+1)over.push(Math.round(l)+'>'+w+': '+t.textContent.slice(0,80));
  });
  c.overflow=over.length;c.overflow_examples=over.slice(0,5);
  c.unrendered=0;all('svg:not(.defs)').forEach(function(s){var r=s.getBoundingClientRect();if(s.getClientRects().length&&(r.width<1||r.height<1))c.unrendered++;});
  // the size of the page showing one section alone (page.html#pstacks), for screenshots
  var hd=d.querySelector('header.top');var hh=hd?hd.getBoundingClientRect().height:0;
  c.sizes={};
  all('section.sec').forEach(function(s){
    var sr=s.getBoundingClientRect();var w=sr.right;
    all('svg',s).forEach(function(v){var r=v.getBoundingClientRect();if(sr.left+r.width+60>w)w=sr.left+r.width+60;});
    c.sizes[s.id]=[Math.ceil(w+24),Math.ceil(hh+sr.height+48)];
  });
  c.height=Math.ceil(d.documentElement.scrollHeight);
  // the behaviours: a click on a box opens its ids, the finder marks boxes, a hover on a
  // graph node lights its edges
  var box=d.querySelector('svg.pstacks .ps-box');
  if(box){
    box.dispatchEvent(new MouseEvent('click',{bubbles:true}));
    var p=d.querySelector('.pop');c.popup=p?p.textContent:null;closePop();
    var inp=d.querySelector('input.ps-filter');
    var first=box.querySelector('.ps-fr title');
    if(inp&&first){inp.value=first.textContent;inp.dispatchEvent(new Event('input'));
      c.filter_matches=all('svg.pstacks .ps-box.match').length;inp.value='';inp.dispatchEvent(new Event('input'));}
  }
  var gn=d.querySelector('svg.graph .g-node');
  if(gn){gn.dispatchEvent(new MouseEvent('mouseenter'));c.lit_edges=all('svg.graph .g-edge.lit').length;gn.dispatchEvent(new MouseEvent('mouseleave'));}
  c.errors=window.__errors||[];
  var pre=d.createElement('pre');pre.id='selfcheck';pre.textContent=JSON.stringify(c);d.body.appendChild(pre);
}
})();
"#;

/// The arrowheads every drawing uses, defined once (`url(#mk-..)` finds them page-wide).
pub fn markers() -> String {
    let mut s = String::from("<svg class=\"defs\" width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>");
    for k in [
        "ps",
        "ch",
        "ch-blocked",
        "waits",
        "mwait",
        "owns",
        "runs",
        "awaits",
        "deadlock",
    ] {
        s.push_str(&format!(
            "<marker id=\"mk-{k}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" markerHeight=\"9\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" class=\"mk-{k}\"/></marker>"
        ));
    }
    s.push_str("</defs></svg>");
    s
}

/// Collects script errors before anything else runs (read by the self check).
pub const JS_ERRORS: &str =
    "window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message));});";
