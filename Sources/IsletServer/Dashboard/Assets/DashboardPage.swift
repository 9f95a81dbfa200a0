/// The dashboard's page: the frame the script fills in; no inline script or style, so that its Content-Security-Policy can forbid both.
/// Embedded in the binary, so that Islet serves it with no build step and no
/// network.
enum DashboardPage {
    /// The text served.
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Islet</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/app.css">
<script src="/dashboard/app.js" defer></script>
</head>
<body data-page="loading">
<header>
<h1><a href="#/">Islet</a></h1>
<nav id="nav"></nav>
<span id="who"></span>
<button id="sign-out" type="button" hidden>Sign out</button>
</header>
<p id="flash" role="status" hidden></p>
<main id="main"><p>Loading…</p></main>
<noscript><p>The dashboard needs JavaScript.</p></noscript>
</body>
</html>
"""#
}
