import APNs
import Delivery
import FCM
import Foundation
import HTTPClient
public import IsletBackground
public import IsletCore
import IsletCrypto
public import IsletLog
import IsletService
import PostgreSQLStorage
import SQLiteStorage
import Storage

/// Makes the embedded simulators of `--simulator` (the executable has them; the library
/// does not link it).
public typealias EmbeddedSimulatorsFactory = @Sendable (_ configuration: Configuration, _ clock: any WallClock) throws -> any EmbeddedSimulators

/// Builds the application described by `configuration`: prepares the data folder,
/// opens and migrates the database, reads the admin token, starts the embedded
/// simulators when asked for (`--simulator`, made by `embeddedSimulators`), and wires the
/// services and routes. The API does not listen and no push is sent until `start`
/// or `run`. `clock` says what is due; `sleeper` paces the background loops (the
/// system's time unless a test drives them).
public func buildApplication(
    _ configuration: Configuration,
    logger: Logger? = nil,
    clock: any WallClock = SystemWallClock(),
    sleeper: any Sleeper = SystemSleeper(),
    embeddedSimulators: EmbeddedSimulatorsFactory? = nil
) throws(ConfigurationError) -> Application {
    let logger = logger ?? Logger(level: configuration.logLevel, format: configuration.logFormat, clock: clock)
    let created = try configuration.prepareFilesystem()
    let secrets: SecretsKeySource
    do throws(ConfigurationError) {
        secrets = try SecretsKeySource.load(configuration)
    } catch {
        Configuration.removeFolders(created)
        throw error
    }
    // A node on an SQLite database holds its lock for as long as it runs: a
    // rotation of the secrets key waits for it to stop (and it for the rotation).
    var databaseLock: DatabaseLock?
    if configuration.postgresURL == nil {
        do {
            databaseLock = try DatabaseLock.take(database: configuration.resolvedDatabasePath, exclusive: false)
        } catch {
            secrets.discardIfGenerated()
            Configuration.removeFolders(created)
            throw ConfigurationError(
                .unusable, setting: Configuration.label(of: \.databasePath),
                message: error.held
                    ? "\(configuration.resolvedDatabasePath): islet secrets rotate is sealing its credentials again; start once it is done"
                    : error.message)
        }
    }
    let store: any Store
    do {
        store = try openStore(configuration, secrets: secrets.key)
    } catch {
        databaseLock?.release()
        // Nothing of a start that failed stays behind: the folders it made go again
        // (with the lock file made in them), and the key it generated, under which
        // nothing was sealed.
        if databaseLock != nil, !created.isEmpty {
            try? FileManager.default.removeItem(atPath: DatabaseLock.path(database: configuration.resolvedDatabasePath))
        }
        secrets.discardIfGenerated()
        Configuration.removeFolders(created)
        if let error = error as? StoreError, error.code == .secretsKeyMismatch {
            throw secrets.mismatch(database: configuration.resolvedDatabasePath)
        }
        let reason = Redaction.hidingPasswords(in: (error as? StoreError)?.message ?? "\(error)")
        let shown = Redaction.hidingPasswords(in: configuration.resolvedDatabasePath)
        throw ConfigurationError(.unusable, setting: Configuration.label(of: \.databasePath), message: "\(shown): \(reason)")
    }
    do throws(ConfigurationError) {
        let application = try assemble(
            configuration, logger: logger, clock: clock, sleeper: sleeper, store: store, embeddedSimulators: embeddedSimulators,
            databaseLock: databaseLock)
        if secrets.generated, let file = secrets.file {
            logger.notice(
                "generated the secrets key that seals credentials in the database: back it up, apart from the database",
                ("file", .string(file)))
        }
        // Its files are its user's only; the folder may hold others' too, so it is
        // not changed, only named.
        if let mode = PrivateFile.openToOthers(configuration.dataDirectory) {
            logger.warning(
                "the data folder is open to other users: chmod 700 it", ("path", .string(configuration.dataDirectory)),
                ("mode", .string(String(mode, radix: 8))))
        }
        return application
    } catch {
        store.close()
        databaseLock?.release()
        throw error
    }
}

/// The store `--database` names: PostgreSQL for a `postgres://` URL, else SQLite;
/// credentials sealed under `secrets`.
private func openStore(_ configuration: Configuration, secrets: SecretsKey) throws -> any Store {
    if let url = configuration.postgresURL {
        return try PostgreSQLStore(
            url: url, poolSize: configuration.databasePoolSize, applicationName: "islet " + configuration.resolvedNodeID,
            secrets: secrets)
    }
    return try SQLiteStore(path: configuration.resolvedDatabasePath, secrets: secrets)
}

/// The rest of `buildApplication`, once the store is open.
private func assemble(
    _ configuration: Configuration, logger: Logger, clock: any WallClock, sleeper: any Sleeper, store: any Store,
    embeddedSimulators factory: EmbeddedSimulatorsFactory?, databaseLock: DatabaseLock?
) throws(ConfigurationError) -> Application {
    let (adminToken, generated) = try AdminToken.load(configuration)

    var embedded: (simulators: any EmbeddedSimulators, endpoint: EmbeddedSimulatorEndpoints)?
    var clientConfiguration = APNsClientConfiguration()
    if configuration.simulator {
        guard let factory else {
            throw ConfigurationError(.unusable, setting: Configuration.label(of: \.simulator), message: "this build of Islet has no embedded simulator")
        }
        do {
            let simulators = try factory(configuration, clock)
            let endpoint = try simulators.start()
            embedded = (simulators, endpoint)
            clientConfiguration.productionURL = endpoint.url
            clientConfiguration.sandboxURL = endpoint.url
            clientConfiguration.trustRootsPEM = endpoint.trustRootsPEM
            logger.notice(
                "APNs simulator running in-process", ("apns", .string(endpoint.url.absoluteString)),
                ("inspect", .string(endpoint.inspectURL ?? "none")))
        } catch {
            throw ConfigurationError(.unusable, setting: Configuration.label(of: \.simulator), message: "cannot start the simulator: \(error)")
        }
    } else {
        clientConfiguration.productionURL = URL(string: configuration.apnsProductionURL)!
        clientConfiguration.sandboxURL = URL(string: configuration.apnsSandboxURL)!
        clientConfiguration.broadcastProductionURL = configuration.apnsBroadcastProductionURL.flatMap(URL.init(string:))
        clientConfiguration.broadcastSandboxURL = configuration.apnsBroadcastSandboxURL.flatMap(URL.init(string:))
        if let caFile = configuration.apnsCAFile {
            guard let pem = FileManager.default.contents(atPath: caFile), !pem.isEmpty else {
                throw ConfigurationError(.unusable, setting: Configuration.label(of: \.apnsCAFile), message: "cannot read \(caFile)")
            }
            clientConfiguration.trustRootsPEM = String(decoding: pem, as: UTF8.self)
        }
    }
    let client = APNsClient(configuration: clientConfiguration, clock: clock)
    var channelConfiguration = APNsChannelConfiguration()
    channelConfiguration.productionURL = URL(string: configuration.apnsChannelsProductionURL)!
    channelConfiguration.sandboxURL = URL(string: configuration.apnsChannelsSandboxURL)!
    channelConfiguration.trustRootsPEM = clientConfiguration.trustRootsPEM
    if let endpoint = embedded?.endpoint, let channelsURL = endpoint.channelsURL {
        channelConfiguration.productionURL = channelsURL
        channelConfiguration.sandboxURL = channelsURL
    }
    let channelClient = APNsChannelClient(configuration: channelConfiguration, tokens: { client.tokenManager(for: $0) })
    var deliveryConfiguration = DeliveryConfiguration(shutdownGrace: configuration.shutdownGraceSeconds)
    deliveryConfiguration.maxInFlight = configuration.deliveryMaxInFlight
    deliveryConfiguration.nodeID = configuration.resolvedNodeID
    deliveryConfiguration.lease = configuration.pushLeaseSeconds
    let fcm = try fcmClients(configuration, embedded: embedded?.endpoint)
    // One memory of refused credentials for both transports.
    let refusals = RefusedCredentials(clock: clock)
    let transports = PushTransports(
        apns: APNsTransport(client: client, store: store, refusals: refusals),
        fcm: FCMTransport(
            client: fcm.client, store: store, exchange: CurlTokenExchange(client: fcm.tokens), clock: clock,
            allowPrivateTokenURIs: configuration.fcmTokenURIsMayBePrivate, logger: logger, refusals: refusals))
    // An app's open event streams on this node ask, like its webhooks, for an event
    // per push sent.
    let streamSlots = EventStreamSlots(maxPerApp: configuration.maxEventStreamsPerApp)
    let delivery = DeliveryWorker(
        store: store, transport: transports, configuration: deliveryConfiguration, clock: clock, sleeper: sleeper,
        logger: logger, streamsOpen: { [streamSlots, clock] appID in streamSlots.wanted(appID: appID, now: clock.now()) })

    let trust: @Sendable (AppRecord) -> Void = { [embedded] app in
        if let credentials = app.credentials { embedded?.simulators.trust(credentials) }
        if let account = app.fcm { embedded?.simulators.trust(account) }
    }
    // Rung when timed work is added or moved, here or on another node: the
    // timekeeper sleeps until its next due item otherwise.
    let timers = Doorbell()
    let environment = ServiceEnvironment(
        store: store, clock: clock, lifecycle: ActivityLifecycle(windows: configuration.lifecycleWindows), logger: logger,
        idempotencyWindow: IdempotencyKey.replayWindow, pushesQueued: { [delivery] in delivery.wake() },
        timersChanged: { [timers] in timers.ring() },
        credentialsChanged: trust, nodeID: configuration.resolvedNodeID, renewLead: configuration.renewLeadMinutes * 60,
        budget: configuration.budget, rateLimits: configuration.rateLimits,
        historyRetentionDays: configuration.historyRetentionDays)
    var eventSettings = EventSettings()
    eventSettings.retention = configuration.eventRetentionDays * 86_400
    eventSettings.startConfirmWindow = configuration.startConfirmMinutes * 60
    let allowPrivate = configuration.webhooksAllowPrivate
    let webhookPolicy = WebhookPolicy(
        allowHTTP: configuration.webhooksAllowHTTP, allowPrivate: allowPrivate, maxPerApp: configuration.maxWebhooksPerApp,
        addressRefusal: { host, port in await CurlWebhookTransport.addressRefusal(host: host, port: port) })
    let services = Services(
        environment: environment, adminToken: adminToken, events: eventSettings, webhooks: webhookPolicy,
        sessionLifetime: configuration.dashboardSessionHours * 3600,
        keyCacheLifetime: .milliseconds(Int(configuration.appKeyCacheSeconds * 1000)),
        signInAttemptsPerMinute: configuration.signInAttemptsPerMinute,
        channelAPI: APNsChannels(client: channelClient), broadcastThreshold: configuration.broadcastThreshold,
        fcmTokenURIs: FCMTokenURIPolicy(
            allowPrivate: configuration.fcmTokenURIsMayBePrivate,
            addressRefusal: { host, port in await CurlWebhookTransport.addressRefusal(host: host, port: port) }))
    var clientSettings = HTTPClientConfiguration()
    clientSettings.allowPrivateAddresses = allowPrivate
    let webhookClient: HTTPClient
    do {
        webhookClient = try HTTPClient(configuration: clientSettings)
    } catch {
        throw ConfigurationError(.unusable, setting: "webhooks", message: "cannot start the webhook client: \(error.message)")
    }
    var retryPolicy = WebhookRetryPolicy()
    retryPolicy.base = configuration.webhookRetryBaseSeconds
    let webhooks = WebhookDispatcher(
        environment: environment, transport: CurlWebhookTransport(client: webhookClient), policy: retryPolicy, sleeper: sleeper)
    let feed = EventFeed(environment: environment, sleeper: sleeper)
    // What other nodes of a shared database tell this one.
    store.subscribe { [delivery, services, streamSlots, clock, timers] notice in
        switch notice {
        case .eventsWanted(let appID):
            streamSlots.openElsewhere(appID: appID, now: clock.now())
        case .pushesQueued:
            delivery.wake()
        case .timersChanged:
            timers.ring()
        case .appChanged:
            services.apps.appChangedElsewhere()
        case .resync:
            services.apps.appChangedElsewhere()
            delivery.wake()
            timers.ring()
        }
    }

    var demo: DemoApp?
    if embedded != nil {
        do {
            for app in try store.readNow({ try $0.apps() }) {
                trust(app)
            }
            demo = try services.apps.prepareDemo(
                name: "Demo", bundleID: "dev.islet.demo", fcm: try embedded?.simulators.makeFCMAccount())
            if let app = try store.readNow({ try $0.app(id: demo!.appID) }) { trust(app) }
        } catch {
            throw ConfigurationError(.unusable, setting: Configuration.label(of: \.simulator), message: "cannot prepare the demo app: \(error)")
        }
    }

    let requestMetrics = RequestMetrics()
    let streaming = EventStreaming(
        feed: feed, events: services.events, keepAlive: .milliseconds(Int(configuration.eventStreamKeepAliveSeconds * 1000)),
        slots: streamSlots)
    let routes = APIRoutes.all(services: services, delivery: delivery, requestMetrics: requestMetrics, streaming: streaming)
    // The dashboard is served beside the API, outside its OpenAPI document.
    let dashboard = DashboardRoutes(
        sessions: services.sessions, publicURLIsHTTPS: configuration.publicURLIsHTTPS, publicURL: configuration.publicURL).routes
    let middleware = APIRoutes.middleware(services: services)
    let router = Dispatcher.router(
        routes: routes + dashboard, middleware: middleware, logger: logger,
        trustForwardedFor: configuration.trustForwardedFor)
    let dispatcher = Dispatcher(
        router: router, logger: logger, metrics: requestMetrics, largeBodyRoutes: Dispatcher.largeBodyRoutes(routes),
        trustForwardedFor: configuration.trustForwardedFor, routes: routes + dashboard,
        authentication: middleware.compactMap { $0 as? AuthenticationMiddleware }.first)
    return Application(Application.Parts(
        configuration: configuration, logger: logger, store: store, services: services, delivery: delivery, client: client,
        channelClient: channelClient, webhooks: webhooks, webhookClient: webhookClient, feed: feed, fcmClient: fcm.client,
        fcmTokenClient: fcm.tokens, embeddedSimulators: embedded, generatedAdminToken: generated ? adminToken : nil, demo: demo,
        sleeper: sleeper, timers: timers, dispatcher: dispatcher, databaseLock: databaseLock))
}

/// The FCM client (`--fcm-url`, or the embedded FCM of `--simulator`) and the HTTP
/// client service accounts' access tokens are exchanged through (trusting
/// `--fcm-ca-file`, or the embedded FCM's CA). A token URI may name a private
/// address only for a simulator: with `--simulator` or `--fcm-allow-private`.
private func fcmClients(
    _ configuration: Configuration, embedded: EmbeddedSimulatorEndpoints?
) throws(ConfigurationError) -> (client: FCMClient, tokens: HTTPClient) {
    var settings = FCMClientConfiguration()
    settings.url = URL(string: configuration.fcmURL)!
    var tokenSettings = HTTPClientConfiguration()
    tokenSettings.allowPrivateAddresses = configuration.fcmTokenURIsMayBePrivate
    if let embedded, let url = embedded.fcmURL {
        settings.url = url
        settings.trustRootsPEM = embedded.fcmTrustRootsPEM
        if let pem = embedded.fcmTrustRootsPEM {
            // libcurl reads its CA from a file: the simulator's, in the data folder,
            // 0600 like every file there (one an older Islet wrote 0644 is replaced).
            let path = (configuration.dataDirectory as NSString).appendingPathComponent("simulator-fcm-ca.pem")
            do {
                try PrivateFile.replace(path, pem)
            } catch {
                throw ConfigurationError(.unusable, setting: Configuration.label(of: \.simulator), message: error.description)
            }
            tokenSettings.caFile = path
        }
    } else if let caFile = configuration.fcmCAFile {
        guard let pem = FileManager.default.contents(atPath: caFile), !pem.isEmpty else {
            throw ConfigurationError(.unusable, setting: Configuration.label(of: \.fcmCAFile), message: "cannot read \(caFile)")
        }
        settings.trustRootsPEM = String(decoding: pem, as: UTF8.self)
        tokenSettings.caFile = caFile
    }
    do {
        return (FCMClient(configuration: settings), try HTTPClient(configuration: tokenSettings))
    } catch {
        throw ConfigurationError(.unusable, setting: "fcm", message: "cannot start the FCM token client: \(error.message)")
    }
}
