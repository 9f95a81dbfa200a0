extension TestPostgres {
    /// The secrets key of the servers the suites start on PostgreSQL, which needs
    /// one (on SQLite a server generates its own): 32 fixed bytes in base64.
    public static let secretsKey = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
}
