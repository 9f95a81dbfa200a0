/// The dashboard's style.
/// Embedded in the binary, so that Islet serves it with no build step and no
/// network.
enum DashboardStyle {
    /// The text served.
    static let source = #"""
:root { color-scheme: light dark; --line: #8884; --accent: #2a6df4; --bad: #c62828; --warn: #b26a00; --ok: #2e7d32; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.2rem; margin: 0; }
header a { color: inherit; text-decoration: none; }
header nav a { margin-right: 1rem; color: var(--accent); }
#who { margin-left: auto; opacity: .75; }
main { padding: 1rem 1.2rem 3rem; max-width: 1200px; }
#flash { margin: .6rem 1.2rem 0; padding: .4rem .8rem; border-radius: 4px; border: 1px solid var(--line); }
#flash.error { border-color: var(--bad); color: var(--bad); }
#flash.ok { border-color: var(--ok); color: var(--ok); }
form#sign-in-form { max-width: 28rem; display: grid; gap: .6rem; margin-top: 2rem; }
form#sign-in-form input { width: 100%; padding: .4rem; font: inherit; }
button { font: inherit; padding: .25rem .7rem; border-radius: 4px; border: 1px solid var(--line); background: transparent; cursor: pointer; }
button.danger { border-color: var(--bad); color: var(--bad); }
button:disabled { opacity: .5; cursor: default; }
.error { color: var(--bad); }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; }
.mono, code, pre { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
pre.json { margin: 0; padding: .5rem; border: 1px solid var(--line); border-radius: 4px; overflow: auto; max-height: 18rem; }
.tabs a { margin-right: 1rem; }
.tabs a.current { font-weight: 700; text-decoration: none; }
.filters { display: flex; gap: 1rem; margin: .8rem 0; }
.actions { margin: .5rem 0; }
.notice { border: 1px solid var(--warn); padding: .4rem .8rem; border-radius: 4px; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; }
dt { opacity: .7; }
dd { margin: 0; }
.status-ended { opacity: .75; }
.hint { opacity: .7; }
.lane { border-left: 3px solid var(--line); padding-left: .8rem; margin-bottom: 1rem; }
.lane h4 { margin: .2rem 0; }
ol.pushes { list-style: none; padding: 0; margin: 0; }
li.push { padding: .2rem 0; }
li.push .detail { opacity: .75; }
li.push.status-failed .status { color: var(--bad); }
li.push.status-sent .status { color: var(--ok); }
li.silent-failure { border-left: 3px solid var(--warn); padding-left: .4rem; margin-left: -.4rem; }
.label { display: inline-block; margin-left: .4rem; padding: 0 .4rem; border-radius: 3px; background: var(--warn); color: #fff; font-size: 12px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(480px, 1fr)); gap: 1rem; }
figure { margin: 0; }
svg.chart .frame { fill: none; stroke: var(--line); }
svg.chart .line { fill: none; stroke: var(--accent); stroke-width: 2; }
svg.chart .caption { font-size: 12px; fill: currentColor; }
"""#
}
