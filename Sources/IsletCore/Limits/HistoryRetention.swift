public import Foundation

/// How long the history of what Islet sent is kept: activities that ended (with
/// their copies, audiences, taps and timelines), and settled sends with their
/// pushes. The server sets it (`--history-retention-days`); an app may keep its
/// own history for less, never for more.
public enum HistoryRetention {
    /// The retention when none is set: 30 days.
    public static let standardDays = 30.0

    /// The days a retention may be, from one hour to ten years. The shortest is the
    /// longest window any rule reads history over: the budgets count the sends and
    /// pushes of the last hour (``SendBudget/window``), the priority-10 updates of a
    /// copy as much as a device's push-to-starts; a shorter retention would delete
    /// what they count, and let through what they hold back.
    public static let days: ClosedRange<Double> = (SendBudget.window / 86_400)...3_650

    /// The range as a sentence says it: `1/24 (one hour) to 3650`.
    public static let spokenRange = "1/24 (one hour) to 3650"

    /// Whether `days` is a retention Islet takes: a finite number within ``days``
    /// (NaN, infinities, zero, negative zero and subnormal numbers are not).
    public static func accepts(_ days: Double) -> Bool {
        days.isFinite && Self.days.contains(days)
    }

    /// A number of days as a sentence says it: `30` rather than `30.0`.
    public static func spoken(_ days: Double) -> String {
        days == days.rounded() && abs(days) < 1e15 ? String(Int(days)) : String(days)
    }

    /// The retention in force, in seconds: the app's own when it has one and it is
    /// shorter than the server's (a server whose retention was shortened after an
    /// app set its own keeps to the server's), else the server's.
    public static func seconds(serverDays: Double, appDays: Double?) -> TimeInterval {
        min(serverDays, appDays ?? serverDays) * 86_400
    }
}
