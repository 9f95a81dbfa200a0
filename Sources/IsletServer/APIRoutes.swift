import Delivery
import IsletCore
import IsletService
import IsletSync

/// Every route of the API, in the order the OpenAPI document lists them.
enum APIRoutes {
    static func all(
        services: Services, delivery: DeliveryWorker?, requestMetrics: RequestMetrics?, streaming: EventStreaming? = nil
    ) -> [APIRoute] {
        let document = Lock<JSONValue>(.null)
        let system = SystemRoutes(
            node: services.nodes, delivery: delivery, requestMetrics: requestMetrics,
            limits: services.environment.limitMetrics, receipts: services.environment.receiptMetrics,
            document: { document.withLock { $0 } })
        let routes = system.routes
            + AppRoutes(apps: services.apps, history: services.history, environment: services.environment).routes
            + DeviceRoutes(devices: services.devices, history: services.history).routes
            + ActivityTypeRoutes(activityTypes: services.activityTypes).routes
            + ActivityRoutes(activities: services.activities, schedules: services.schedules).routes
            + TimelineRoutes(timelines: services.timelines).routes
            + ScheduleRoutes(schedules: services.schedules).routes
            + NotificationRoutes(notifications: services.notifications, schedules: services.schedules).routes
            + NodeRoutes(nodes: services.nodes).routes
            + SessionRoutes(sessions: services.sessions).routes
            + WebhookRoutes(webhooks: services.webhooks).routes
            + ChannelRoutes(channels: services.channels).routes
            + EventRoutes(events: services.events, stream: streaming).routes
            // Without a stream, the list is read, never served (tests that list the routes).
            + ExportRoutes(
                activities: services.activities, history: services.history, clock: streaming?.clock ?? ContinuousClock()
            ).routes
        document.withLock { $0 = OpenAPIDocument.make(routes: routes) }
        return routes
    }

    /// The middleware every route runs behind, in order.
    static func middleware(services: Services) -> [any Middleware] {
        [
            AuthenticationMiddleware(apps: services.apps, sessions: services.sessions, signIns: services.signIns),
            RateLimitMiddleware(limiter: services.rateLimits, logger: services.environment.logger),
        ]
    }
}
