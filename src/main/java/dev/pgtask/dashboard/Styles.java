package dev.pgtask.dashboard;

/** The dashboard's one stylesheet, served as {@code /style.css} (the content security policy allows no inline style). */
final class Styles {

  private Styles() {}

  static final String CSS = """
      :root{--fg:#1d2330;--muted:#5b6475;--line:#d9dee7;--bg:#f6f7f9;--accent:#2357c6;--bad:#b42318;--ok:#137333}
      *{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
      header{background:#fff;border-bottom:1px solid var(--line)}nav{display:flex;gap:14px;align-items:center;padding:10px 20px;flex-wrap:wrap}
      nav a{color:var(--muted);text-decoration:none}nav a.here{color:var(--accent);font-weight:600}
      .mode{margin-left:auto;font-size:12px;padding:2px 8px;border-radius:10px;border:1px solid var(--line)}.mode.rw{color:var(--bad)}
      main{padding:16px 20px;max-width:1400px}h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:20px 0 8px}
      table{border-collapse:collapse;background:#fff;border:1px solid var(--line);width:100%;margin-bottom:12px}
      th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top;font-size:13px}
      th{background:#eef1f6;font-weight:600}td.num{text-align:right}
      pre{background:#fff;border:1px solid var(--line);padding:10px;overflow:auto;max-height:480px;white-space:pre-wrap;word-break:break-all}
      .inline{display:inline}button{font:inherit;padding:3px 10px;border:1px solid var(--line);border-radius:4px;background:#fff;cursor:pointer}
      button:hover{border-color:var(--accent)}form.filters{display:flex;gap:8px;flex-wrap:wrap;align-items:end;margin-bottom:12px}
      form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}input,select{font:inherit;padding:3px 6px}
      .flash{background:#e6f4ea;border:1px solid #b7dfc2;padding:8px}.problem{background:#fdecea;border:1px solid #f5c2bd;padding:8px}
      .bad{color:var(--bad)}.ok{color:var(--ok)}.muted{color:var(--muted)}.cards{display:flex;gap:10px;flex-wrap:wrap}
      .card{background:#fff;border:1px solid var(--line);padding:8px 12px;min-width:160px}.card b{display:block;font-size:18px}
      svg.chart{background:#fff;border:1px solid var(--line)}svg.chart rect.c{fill:#2357c6}svg.chart rect.d{fill:#b42318}
      .pager a{margin-right:12px}
      """;
}
