public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// IsletKit's public face, as a protocol so that an app's tests can put a fake in
/// its place. `Islet` is the real one.
public protocol IsletClient: AnyObject, Sendable {
    /// Follows one activity type from now on: its push-to-start token, its
    /// activities' update tokens, ends, shown contents (receipts). Once per type.
    func track(_ source: any ActivitySource) async
    /// Reads again what ActivityKit has and brings the server level with it (done at
    /// `track`, and on each return to the foreground).
    func refresh() async
    /// A new user (or none) and tags: the device is registered again.
    func setUser(_ userID: String?, tags: [String]?) async
    /// The device token for ordinary alerts (`didRegisterForRemoteNotifications…`).
    func setAPNsDeviceToken(_ token: Data) async
    /// Removes the device's push-to-start tokens at the server and forgets the user;
    /// tokens go again at the next `setUser` with a user.
    func logout() async
    /// A secret the app's backend had the server reset, after `secretRefused`.
    func useDeviceSecret(_ secret: String) async
    /// Counts a tap the URL carries (see `IsletTapURL`) and answers the app's own URL.
    func handle(_ url: URL) async -> URL
    func status(ofActivity activityID: String) async -> IsletStatus
    func status(ofType activityType: String) async -> IsletStatus
    /// Each event from now on, for every reader.
    var events: AsyncStream<IsletEvent> { get }
    func diagnostics() async -> IsletDiagnostics
    /// Tries the outbox now, without waiting out a backoff.
    func flush() async
    /// Stops following and uploading (what is in the outbox stays on disk).
    func shutdown() async
}

/// Keeps the app's Islet level with what ActivityKit has on the device.
public actor Islet: IsletClient {
    let configuration: IsletConfiguration
    let secrets: any SecretStore
    let host: any DeviceHost
    let transport: any IsletTransport
    let now: @Sendable () -> Date
    let random: @Sendable () -> Double
    let file: StateFile
    var state: KitState
    var sources: [String: any ActivitySource] = [:]
    /// The followers of each activity (by ActivityKit's id) and of each type.
    var followers: [String: [Task<Void, Never>]] = [:]
    var drainer: Task<Void, Never>?
    var wake: CheckedContinuation<Void, Never>?
    var timer: Task<Void, Never>?
    var frequentPushes: Bool?
    var stopped = false
    let hub = EventHub()
    /// This instance, to the process-wide inbox of taps.
    let instance = UUID()

    public nonisolated var events: AsyncStream<IsletEvent> { hub.stream() }

    /// Taps heard before any `Islet` runs are held and counted once one does.
    @discardableResult
    public static func handle(_ url: URL) -> URL {
        let (tap, appURL) = IsletTapURL.parse(url, at: IsletSystemClock.now())
        if let tap { TapInbox.shared.put(tap) }
        return appURL
    }

    /// Reads the state kept at `configuration.storageDirectory` (the outbox of the
    /// last launch included), registers the device when it must, and starts
    /// uploading. Follow each activity type with `track`. `now` is the wall clock
    /// that stamps taps and receipts and schedules retries (a retry is waited for in
    /// real time, until `now` reaches its time); `random` spreads the retries.
    public static func start(
        _ configuration: IsletConfiguration, secrets: any SecretStore, host: any DeviceHost = PlainDeviceHost(),
        transport: any IsletTransport = URLSessionTransport(), now: @escaping @Sendable () -> Date = IsletSystemClock.now,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) async -> Islet {
        let islet = Islet(configuration, secrets: secrets, host: host, transport: transport, now: now, random: random)
        await islet.begin()
        return islet
    }

    init(
        _ configuration: IsletConfiguration, secrets: any SecretStore, host: any DeviceHost, transport: any IsletTransport,
        now: @escaping @Sendable () -> Date, random: @escaping @Sendable () -> Double
    ) {
        self.configuration = configuration
        self.secrets = secrets
        self.host = host
        self.transport = transport
        self.now = now
        self.random = random
        self.file = StateFile(url: configuration.storageDirectory.appendingPathComponent("islet-state.json"))
        let kept = file.read()
        let deviceID = configuration.deviceID ?? kept?.deviceID ?? UUID().uuidString.lowercased()
        if var kept, kept.deviceID == deviceID {
            if kept.userID != configuration.userID && configuration.userID != nil { kept.pushToStartPaused = false }
            kept.userID = configuration.userID ?? kept.userID
            kept.tags = configuration.tags.isEmpty ? kept.tags : configuration.tags
            state = kept
        } else {
            state = KitState(deviceID: deviceID, userID: configuration.userID, tags: configuration.tags)
        }
    }

    var secretAccount: String { "\(configuration.appID).\(state.deviceID)" }

    func begin() async {
        frequentPushes = await host.frequentPushesEnabled()
        registerIfChanged()
        let held = TapInbox.shared.take(id: instance) { [weak self] tap in
            guard let self else { return }
            Task { await self.enqueueTap(tap) }
        }
        for tap in held { enqueueTap(tap) }
        let host = self.host
        followers["host"] = [
            Task { [weak self] in
                for await _ in host.foregroundReturns() { await self?.refresh() }
            },
            Task { [weak self] in
                for await enabled in host.frequentPushEnablementUpdates() { await self?.frequentPushesChanged(enabled) }
            },
        ]
        kick()
    }

    func frequentPushesChanged(_ enabled: Bool) {
        frequentPushes = enabled
        registerIfChanged()
    }

    // MARK: - The public calls

    public func track(_ source: any ActivitySource) async {
        guard !stopped, sources[source.activityType] == nil else { return }
        sources[source.activityType] = source
        followers["type:\(source.activityType)"] = [
            Task { [weak self] in
                for await token in source.pushToStartTokenUpdates() { await self?.pushToStartToken(token, of: source.activityType) }
            },
            Task { [weak self] in
                for await activity in source.activityUpdates() { await self?.seen(activity, of: source) }
            },
        ]
        await reconcile(source)
    }

    public func refresh() async {
        registerIfChanged()
        for source in sources.values { await reconcile(source) }
        kick()
    }

    public func setUser(_ userID: String?, tags: [String]?) async {
        state.userID = userID
        if let tags { state.tags = tags }
        if userID != nil && state.pushToStartPaused {
            state.pushToStartPaused = false
            save()
            await refresh()
        } else {
            registerIfChanged()
            kick()
        }
    }

    public func setAPNsDeviceToken(_ token: Data) async {
        state.apnsToken = token.hex
        registerIfChanged()
        kick()
    }

    public func logout() async {
        state.pushToStartPaused = true
        for type in sources.keys.sorted() {
            state.accepted["pts:\(type)"] = nil
            state.outbox.removeAll { $0.key == "pts:\(type)" && !isInFlight($0) }
            enqueue(OutboxEntry(
                id: UUID().uuidString, upload: IsletUpload(kind: .pushToStartRemoval, subject: type), method: "DELETE",
                path: "/push-to-start/\(type.pathSafe)", body: nil, key: "pts-remove:\(type)", value: nil, notBefore: now()))
        }
        state.userID = nil
        registerIfChanged()
        kick()
    }

    public func useDeviceSecret(_ secret: String) async {
        try? secrets.setSecret(secret, for: secretAccount)
        state.secretRefused = false
        save()
        kick()
    }

    public func handle(_ url: URL) async -> URL {
        let (tap, appURL) = IsletTapURL.parse(url, at: now())
        if let tap { enqueueTap(tap) }
        return appURL
    }

    public func status(ofActivity activityID: String) async -> IsletStatus {
        if let reason = state.failures[activityID] { return .failed(reason) }
        if state.outbox.contains(where: { $0.upload.kind == .updateToken && $0.upload.subject == activityID }) { return .pending }
        if state.accepted["act:\(activityID)"] != nil { return .registered }
        let known = state.known.values.filter { $0.activityID == activityID }
        if known.contains(where: \.onChannel) { return .registered }
        return known.isEmpty ? .notTracked : .pending
    }

    public func status(ofType activityType: String) async -> IsletStatus {
        guard sources[activityType] != nil else { return .notTracked }
        if let reason = state.failures["type:\(activityType)"] { return .failed(reason) }
        return state.accepted["pts:\(activityType)"] != nil ? .registered : .pending
    }

    public func diagnostics() async -> IsletDiagnostics {
        let hasSecret = ((try? secrets.secret(for: secretAccount)) ?? nil) != nil
        var types: [String: Bool] = [:]
        for type in sources.keys { types[type] = state.accepted["pts:\(type)"] != nil }
        let activities = state.accepted.keys.filter { $0.hasPrefix("act:") }.map { String($0.dropFirst(4)) }.sorted()
        return IsletDiagnostics(
            deviceID: state.deviceID, registered: state.registered != nil, hasSecret: hasSecret,
            secretRefused: state.secretRefused, pushToStartTypes: types, activitiesWithToken: activities,
            outboxLength: state.outbox.count, lastError: state.lastError)
    }

    public func flush() async {
        for index in state.outbox.indices { state.outbox[index].notBefore = min(state.outbox[index].notBefore, now()) }
        kick()
        wakeUp()
    }

    public func shutdown() async {
        stopped = true
        TapInbox.shared.release(instance)
        for tasks in followers.values { for task in tasks { task.cancel() } }
        followers = [:]
        drainer?.cancel()
        wakeUp()
        await drainer?.value
        drainer = nil
        save()
        hub.finish()
    }

    // MARK: - What ActivityKit has

    func reconcile(_ source: any ActivitySource) async {
        let type = source.activityType
        if let token = await source.pushToStartToken() { pushToStartToken(token, of: type) }
        var snapshots = await source.activities()
        // Duplicates of one Islet activity: the copy whose token the server holds
        // (else the first) stays, the others are ended on the device.
        var keep: [String: String] = [:]
        for snapshot in snapshots where !snapshot.phase.isOver {
            guard let id = snapshot.activityID else { continue }
            let accepted = snapshot.pushToken.map { state.accepted["act:\(id)"] == $0.hex } ?? false
            if keep[id] == nil || accepted { keep[id] = snapshot.localID }
        }
        var duplicates: Set<String> = []
        for snapshot in snapshots where !snapshot.phase.isOver {
            guard let id = snapshot.activityID, keep[id] != snapshot.localID else { continue }
            duplicates.insert(snapshot.localID)
            // Ended as a duplicate, not by the user: no end goes to the server.
            state.known[snapshot.localID] = nil
            followers.removeValue(forKey: snapshot.localID)?.forEach { $0.cancel() }
            await source.end(snapshot.localID)
            hub.send(.duplicateEnded(activityID: id, localID: snapshot.localID))
        }
        snapshots.removeAll { duplicates.contains($0.localID) }
        // Activities that ended while the app was not running: gone, or over.
        let live = Set(snapshots.filter { !$0.phase.isOver }.map(\.localID))
        for (localID, known) in state.known where known.activityType == type && !live.contains(localID) {
            ended(localID)
        }
        for snapshot in snapshots { seen(snapshot, of: source) }
        save()
        kick()
    }

    func seen(_ snapshot: ActivitySnapshot, of source: any ActivitySource) {
        guard !stopped, let activityID = snapshot.activityID else { return }
        if snapshot.phase.isOver {
            if state.known[snapshot.localID] != nil { ended(snapshot.localID) }
            return
        }
        if state.known[snapshot.localID] == nil {
            state.known[snapshot.localID] = KnownActivity(
                activityID: activityID, activityType: source.activityType, onChannel: snapshot.channelID != nil)
        }
        if let token = snapshot.pushToken { updateToken(token, localID: snapshot.localID) }
        if let sendID = snapshot.shownSendID { shown(sendID, localID: snapshot.localID) }
        follow(snapshot.localID, of: source)
        save()
        kick()
    }

    func follow(_ localID: String, of source: any ActivitySource) {
        guard followers[localID] == nil else { return }
        followers[localID] = [
            Task { [weak self] in
                for await token in source.pushTokenUpdates(of: localID) { await self?.updateToken(token, localID: localID) }
            },
            Task { [weak self] in
                for await phase in source.phaseUpdates(of: localID) where phase.isOver {
                    await self?.ended(localID)
                    break
                }
            },
            Task { [weak self] in
                for await content in source.contentUpdates(of: localID) {
                    if let sendID = content.sendID { await self?.shown(sendID, localID: localID) }
                }
            },
        ]
    }

    func pushToStartToken(_ token: Data, of type: String) {
        guard !state.pushToStartPaused else { return }
        let hex = token.hex
        enqueue(OutboxEntry(
            id: UUID().uuidString, upload: IsletUpload(kind: .pushToStartToken, subject: type), method: "PUT",
            path: "/push-to-start/\(type.pathSafe)", body: json(["token": hex]), key: "pts:\(type)", value: hex,
            notBefore: now()))
        kick()
    }

    func updateToken(_ token: Data, localID: String) {
        guard let known = state.known[localID], !known.onChannel else { return }
        let hex = token.hex
        enqueue(OutboxEntry(
            id: UUID().uuidString, upload: IsletUpload(kind: .updateToken, subject: known.activityID), method: "PUT",
            path: "/activities/\(known.activityID.pathSafe)",
            body: json(["activity_type": known.activityType, "token": hex]), key: "act:\(known.activityID)", value: hex,
            notBefore: now()))
        kick()
    }

    func shown(_ sendID: String, localID: String) {
        guard let known = state.known[localID] else { return }
        enqueue(OutboxEntry(
            id: UUID().uuidString, upload: IsletUpload(kind: .receipt, subject: known.activityID), method: "POST",
            path: "/activities/\(known.activityID.pathSafe)/receipts",
            body: json(["send_id": sendID, "received_at": RFC3339Text.string(now())]),
            key: "receipt:\(known.activityID):\(sendID)", value: nil, notBefore: now()))
        kick()
    }

    func ended(_ localID: String) {
        guard let known = state.known.removeValue(forKey: localID) else { return }
        followers.removeValue(forKey: localID)?.forEach { $0.cancel() }
        // Another copy of the same activity on this device still runs: not over.
        guard !state.known.values.contains(where: { $0.activityID == known.activityID }) else { return }
        state.outbox.removeAll { $0.upload.kind == .updateToken && $0.upload.subject == known.activityID && !isInFlight($0) }
        enqueue(OutboxEntry(
            id: UUID().uuidString, upload: IsletUpload(kind: .end, subject: known.activityID), method: "POST",
            path: "/activities/\(known.activityID.pathSafe)/end", body: json([:]), key: "end:\(known.activityID)",
            value: nil, notBefore: now()))
        save()
        kick()
    }

    func enqueueTap(_ tap: PendingTap) {
        guard !stopped else { return }
        var body = ["tapped_at": RFC3339Text.string(tap.tappedAt)]
        if let apnsID = tap.apnsID { body["apns_id"] = apnsID }
        enqueue(OutboxEntry(
            id: UUID().uuidString, upload: IsletUpload(kind: .tap, subject: tap.activityID), method: "POST",
            path: "/activities/\(tap.activityID.pathSafe)/taps", body: json(body),
            key: "tap:\(tap.activityID):\(RFC3339Text.string(tap.tappedAt))", value: nil, notBefore: now()))
        kick()
    }

    // MARK: - The registration

    func registrationBody() -> [String: Any] {
        var body: [String: Any] = ["platform": "ios", "environment": configuration.environment.rawValue, "tags": state.tags]
        body["user_id"] = state.userID.map { $0 as Any } ?? NSNull()
        if let token = state.apnsToken { body["apns_token"] = token }
        if let frequentPushes { body["frequent_updates"] = frequentPushes }
        if let version = host.osVersion { body["os_version"] = version }
        return body
    }

    /// Queues a registration when what the server holds differs from the device's
    /// (first launch, a new user, tags, setting), ahead of everything else.
    func registerIfChanged() {
        let body = json(registrationBody())
        let text = String(decoding: body, as: UTF8.self)
        guard state.registered != text else { return }
        if let waiting = state.outbox.first(where: { $0.upload.kind == .registration }), waiting.value == text { return }
        state.outbox.removeAll { $0.upload.kind == .registration && !isInFlight($0) }
        let entry = OutboxEntry(
            id: UUID().uuidString, upload: IsletUpload(kind: .registration, subject: nil), method: "PUT", path: "",
            body: body, key: "registration", value: text, idempotencyKey: UUID().uuidString, notBefore: now())
        let position = state.outbox.firstIndex { !isInFlight($0) } ?? state.outbox.count
        state.outbox.insert(entry, at: position)
        save()
    }

    // MARK: - The outbox

    var inFlight: String?

    func isInFlight(_ entry: OutboxEntry) -> Bool { entry.id == inFlight }

    func enqueue(_ entry: OutboxEntry) {
        if let value = entry.value, state.accepted[entry.key] == value { return }
        if entry.value == nil && state.recent.contains(entry.key) { return }
        if entry.value == nil && state.outbox.contains(where: { $0.key == entry.key }) { return }
        // A newer token replaces one still waiting.
        state.outbox.removeAll { $0.key == entry.key && !isInFlight($0) }
        state.outbox.append(entry)
        save()
    }

    func save() { file.write(state) }

    func kick() {
        guard !stopped, drainer == nil, !state.outbox.isEmpty else { return }
        drainer = Task { [weak self] in
            guard let self else { return }
            await self.host.withBackgroundTime("IsletKit upload") { await self.drain() }
            await self.drained()
        }
    }

    func drained() {
        drainer = nil
        if !stopped && !state.secretRefused && !state.outbox.isEmpty { kick() }
    }

    func drain() async {
        while !stopped, !Task.isCancelled, !state.secretRefused, let entry = state.outbox.first {
            let wait = entry.notBefore.timeIntervalSince(now())
            if wait > 0 {
                await pause(seconds: wait)
                continue
            }
            await attempt(entry)
        }
    }

    /// Waits `seconds`, or until `flush` or `shutdown` wakes it.
    func pause(seconds: Double) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            wake = continuation
            timer = Task { [weak self] in
                await IsletSystemClock.sleep(seconds: seconds)
                await self?.wakeUp()
            }
        }
    }

    func wakeUp() {
        timer?.cancel()
        timer = nil
        wake?.resume()
        wake = nil
    }

    func attempt(_ entry: OutboxEntry) async {
        inFlight = entry.id
        defer { inFlight = nil }
        var request = URLRequest(url: url(entry.path))
        request.httpMethod = entry.method
        request.setValue("Bearer \(configuration.deviceKey)", forHTTPHeaderField: "Authorization")
        if let body = entry.body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let secret = (try? secrets.secret(for: secretAccount)) ?? nil {
            request.setValue(secret, forHTTPHeaderField: "Islet-Device-Secret")
        }
        if let key = entry.idempotencyKey { request.setValue(key, forHTTPHeaderField: "Idempotency-Key") }
        let answer: HTTPAnswer
        do {
            answer = try await transport.send(request)
        } catch {
            retry(entry, reason: "\(error)", retryAfter: nil)
            return
        }
        switch Verdict(answer, kind: entry.upload.kind) {
        case .accepted: accepted(entry, answer)
        case .secretRefused:
            state.secretRefused = true
            state.lastError = answer.problemDetail
            save()
            hub.send(.secretRefused)
        case .unregistered where entry.attempts == 0:
            // Registered again, ahead of this upload, which follows it; a second 404
            // after that waits out a backoff (the device is not the cause then).
            if let index = state.outbox.firstIndex(where: { $0.id == entry.id }) { state.outbox[index].attempts = 1 }
            state.registered = nil
            inFlight = nil
            registerIfChanged()
        case .unregistered: retry(entry, reason: answer.problemDetail, retryAfter: nil)
        case .retry(let retryAfter): retry(entry, reason: answer.problemDetail, retryAfter: retryAfter)
        case .refused: refused(entry, reason: answer.problemDetail)
        }
    }

    func url(_ path: String) -> URL {
        var base = configuration.serverURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let device = "/v1/apps/\(configuration.appID.pathSafe)/devices/\(state.deviceID.pathSafe)"
        return URL(string: base + device + path) ?? configuration.serverURL
    }

    func accepted(_ entry: OutboxEntry, _ answer: HTTPAnswer) {
        remove(entry)
        switch entry.upload.kind {
        case .registration:
            if let secret = answer.json?["device_secret"] as? String { try? secrets.setSecret(secret, for: secretAccount) }
            state.registered = entry.value
            hub.send(.registered(deviceID: state.deviceID))
        case .pushToStartToken:
            // A token that went while `logout()` queued its removal is removed next:
            // not held at the server, so it goes again with the next user.
            if !state.pushToStartPaused { state.accepted[entry.key] = entry.value }
            state.failures["type:\(entry.upload.subject ?? "")"] = nil
        case .updateToken:
            state.accepted[entry.key] = entry.value
            state.failures[entry.upload.subject ?? ""] = nil
        case .pushToStartRemoval: break
        case .end, .tap, .receipt:
            state.recent.append(entry.key)
            if state.recent.count > KitState.recentLimit { state.recent.removeFirst(state.recent.count - KitState.recentLimit) }
            if entry.upload.kind == .end, let id = entry.upload.subject { state.accepted["act:\(id)"] = nil }
        }
        save()
        if entry.upload.kind != .registration { hub.send(.uploaded(entry.upload)) }
    }

    func retry(_ entry: OutboxEntry, reason: String, retryAfter: Duration?) {
        guard let index = state.outbox.firstIndex(where: { $0.id == entry.id }) else { return }
        state.outbox[index].attempts += 1
        let attempts = state.outbox[index].attempts
        let wait = configuration.retry.delay(afterFailures: attempts, unit: random(), retryAfter: retryAfter)
        state.outbox[index].notBefore = now().addingTimeInterval(wait.inSeconds)
        state.lastError = reason
        save()
        hub.send(.retrying(entry.upload, reason: reason, attempt: attempts))
    }

    func refused(_ entry: OutboxEntry, reason: String) {
        remove(entry)
        state.lastError = reason
        switch entry.upload.kind {
        case .pushToStartToken: state.failures["type:\(entry.upload.subject ?? "")"] = reason
        case .updateToken: if let id = entry.upload.subject { state.failures[id] = reason }
        default: break
        }
        save()
        hub.send(.refused(entry.upload, reason: reason))
    }

    func remove(_ entry: OutboxEntry) {
        state.outbox.removeAll { $0.id == entry.id }
    }

    func json(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }
}

/// What an answer means for the upload that got it.
enum Verdict: Equatable {
    case accepted
    /// The device's secret was refused: everything waits for a new one.
    case secretRefused
    /// The server does not know the device (its database was reset): register again.
    case unregistered
    case retry(Duration?)
    case refused

    init(_ answer: HTTPAnswer, kind: IsletUpload.Kind) {
        switch answer.status {
        case 200..<300: self = .accepted
        case 403 where answer.names("Islet-Device-Secret"): self = .secretRefused
        // A push-to-start token already gone is what its removal wanted.
        case 404 where kind == .pushToStartRemoval: self = .accepted
        case 404 where kind == .pushToStartToken || kind == .updateToken: self = .unregistered
        case 408, 425, 429, 500...599: self = .retry(answer.retryAfter)
        default: self = .refused
        }
    }
}

extension HTTPAnswer {
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }

    /// Whether a problem's `errors` name `field`.
    func names(_ field: String) -> Bool {
        let errors = json?["errors"] as? [[String: Any]] ?? []
        return errors.contains { ($0["field"] as? String) == field }
    }

    var problemDetail: String {
        let detail = json?["detail"] as? String ?? json?["title"] as? String
        return "HTTP \(status)" + (detail.map { ": \($0)" } ?? "")
    }

    var retryAfter: Duration? {
        guard let text = header("Retry-After"), let seconds = Int(text.trimmingCharacters(in: .whitespaces)), seconds >= 0
        else { return nil }
        return .seconds(min(seconds, 86_400))
    }
}

extension Data {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

extension String {
    /// The string as one path segment.
    var pathSafe: String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        return addingPercentEncoding(withAllowedCharacters: allowed) ?? self
    }
}

/// RFC 3339 times, as the server reads them.
enum RFC3339Text {
    static func string(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
