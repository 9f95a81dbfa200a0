import Foundation
import IsletCore
import IsletLog
import IsletService
import IsletTesting
import Storage
import Testing

/// 1e-320, a subnormal number, read from text: a literal of it warns that it loses
/// precision.
private let subnormal = Double("1e-320")!

/// The app service refuses a rate-limit or budget figure outside its bounds,
/// whoever calls it, and the rate limiter answers for any figure an app record
/// holds (on PostgreSQL, through the shared bucket's row).
@Suite("Limits: the figures in the app service and the rate limiter")
struct LimitFiguresServiceTests {
    private func withServices(_ body: (Services, ManualWallClock) async throws -> Void) async throws {
        try await withSuiteStore { store in
            let clock = ManualWallClock(start: Date(timeIntervalSince1970: 1_800_000_000))
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600)
            try await body(Services(environment: environment, adminToken: "islet_admin_limit_figures_tests_01"), clock)
        }
    }

    private func refusal(_ body: () async throws -> Void) async -> ServiceError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? ServiceError
        }
    }

    @Test func aFigureOutsideItsBoundsIsRefusedNamingIt() async throws {
        try await withServices { services, _ in
            let app = try await services.apps.create(
                CreateApp(name: "Shop", bundleID: "com.example.shop", credentials: nil, strictActivityTypes: false)).app
            func update(_ limits: RateLimitChange? = nil, _ budget: BudgetChange? = nil) async throws -> AppRecord {
                var command = UpdateApp(appID: app.id, name: nil, bundleID: nil, credentials: nil, strictActivityTypes: nil)
                command.rateLimits = limits
                command.budget = budget
                return try await services.apps.update(command)
            }
            for rate in LimitArithmeticFigures.ratesOutside {
                let error = await refusal { _ = try await update(RateLimitChange(sendsPerSecond: .some(rate))) }
                #expect(error?.code == .invalid && error?.fields?.map(\.field) == ["rate_limits.sends_per_second"], "\(rate)")
                #expect(error?.fields?.first?.message.contains("0.0002777777777777778") == true, "\(rate)")
            }
            for burst in [Int.min, -1, 0, 10_000_001, .max] {
                let error = await refusal { _ = try await update(RateLimitChange(registrationsBurst: .some(burst))) }
                #expect(error?.fields?.map(\.field) == ["rate_limits.registrations_burst"], "\(burst)")
            }
            for figure in [Int.min, -1, 0, 100_001, .max] {
                let error = await refusal {
                    _ = try await update(nil, BudgetChange(priority10PerHour: .some(figure), startsPerDevicePerHour: .some(figure)))
                }
                #expect(
                    error?.fields?.map(\.field) == ["budget.priority_10_per_hour", "budget.starts_per_device_per_hour"],
                    "\(figure)")
            }
            // Nothing refused was kept; the bounds are taken.
            #expect(try await services.apps.app(id: app.id).rateLimits.isEmpty)
            let slowest = try await update(
                RateLimitChange(sendsPerSecond: .some(1.0 / 3_600), sendsBurst: .some(10_000_000)),
                BudgetChange(priority10PerHour: .some(100_000), startsPerDevicePerHour: .some(1)))
            #expect(slowest.rateLimits.sendsPerSecond == 1.0 / 3_600 && slowest.rateLimits.sendsBurst == 10_000_000)
            #expect(slowest.budget.priority10PerHour == 100_000 && slowest.budget.startsPerDevicePerHour == 1)
        }
    }

    @Test func theRateLimiterAnswersForAnyFigureAnAppHolds() async throws {
        try await withServices { services, clock in
            var app = try await services.apps.create(
                CreateApp(name: "Shop", bundleID: "com.example.shop", credentials: nil, strictActivityTypes: false)).app
            let limiter = RateLimiter(environment: services.environment)
            for rate in LimitArithmeticFigures.extremes {
                for burst in [Int.min, 0, 1, 10_000_001, .max, nil] {
                    app.rateLimits = RateLimitOverrides(sendsPerSecond: rate, sendsBurst: burst)
                    for _ in 0..<3 {
                        let decision = try await limiter.take(.sends, app: app)
                        #expect((decision == nil) == !(rate > 0), "\(rate) \(String(describing: burst))")
                        if let decision {
                            #expect(decision.quota >= 1 && decision.windowSeconds >= 1 && decision.remaining >= 0)
                        }
                    }
                    clock.advance(by: 1)
                }
            }
        }
    }
}

/// Figures at and past every edge.
enum LimitArithmeticFigures {
    static let extremes: [Double] = [
        0, -0.0, 1e-12, subnormal, .leastNonzeroMagnitude, 1.0 / 3_600, 1, 1_000_000, 1e300, .greatestFiniteMagnitude,
        .infinity, -1, .nan, Double(Int64.max),
    ]
    static let ratesOutside: [Double] = [
        0, -0.0, 1e-12, subnormal, .leastNonzeroMagnitude, (1.0 / 3_600).nextDown, 1_000_000.0.nextUp, 1e300,
        .greatestFiniteMagnitude, .infinity, -.infinity, .nan, -1, Double(Int64.max),
    ]
}
