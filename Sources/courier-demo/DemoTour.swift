import Courier
import CourierTesting
import Foundation

/// The tour against the embedded fixture API: every step of issue 7, each checking that
/// what happened on the wire matches what it prints.
struct DemoTour {
    let fixture: FixtureAPI
    let cacheDirectory: String

    /// Runs every step.
    /// - Returns: the failed steps (empty when the tour behaved as shown).
    func run(_ runner: TourRunner) async throws -> [String] {
        let purged = LockedValue(0)
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(FixtureAPI.cdnHost, .forceLifetime(.seconds(365 * 86_400)))],
                storage: .disk(directory: cacheDirectory),
                onEvent: { event in
                    if case .purged(let count) = event { purged.withLock { $0 += count } }
                }))
        let center = NotificationCenter()
        let client = try HTTPClient(
            configuration: .init(
                baseURL: fixture.apiURL, resolve: [fixture.cdnResolve], notificationCenter: center, cache: cache))
        let auth = AuthService(
            core: ServiceCore(client: client, configuration: ServiceConfiguration(retryPolicy: .none)))
        let coordinator = AuthRefreshCoordinator<String> { expired in try await auth.refresh(expired: expired) }
        // One configuration for the domain services: they share the token and its refresh.
        let shared = ServiceConfiguration(authentication: .bearer(coordinator))
        let users = UserService(core: ServiceCore(client: client, configuration: shared))
        let feed = FeedService(core: ServiceCore(client: client, configuration: shared))
        guard let cdn = URL(string: fixture.cdnURL) else { throw CourierError(.configuration, "the CDN URL") }
        let media = MediaService(core: ServiceCore(client: client, configuration: shared), cdn: cdn)
        let wallet = WalletService(
            core: ServiceCore(
                client: client, configuration: WalletService.configuration(authentication: .bearer(coordinator))))
        let fixture = self.fixture

        var token = ""
        await runner.step("log in (AuthService)") {
            let session = try await auth.signIn(username: "ada", password: FixtureAPI.password)
            token = session.token
            try expect(client.isLoggedIn, "the client did not follow the login notification")
            try expect(coordinator.current == token, "the services did not follow the login notification")
            return "user \(session.userId) signed in; courierUserDidLogIn → client and services hold the token"
        }

        await runner.step("JSON GET → User") {
            let user = try await users.me()
            let sent = fixture.lastAuthorization("/users/me") ?? nil
            try expect(user.id == 42 && user.name == "Ada Lovelace", "decoded \(user)")
            try expect(sent == "Bearer \(token)", "the server saw Authorization: \(TourRunner.mask(sent))")
            return "User(id: \(user.id), name: \"\(user.name)\"); server saw Authorization: \(TourRunner.mask(sent))"
        }

        await runner.step("form POST (settings)") {
            let saved = try await users.updateSettings(Settings(theme: "dark", notifications: true, language: "en"))
            try expect(
                saved.contentType.hasPrefix("application/x-www-form-urlencoded"), "sent as \(saved.contentType)")
            try expect(saved.received.contains("theme=dark"), "the server got \(saved.received)")
            return "server got \(saved.contentType): \(saved.received)"
        }

        await runner.step("protobuf GET → UserProfile") {
            let response = try await users.profile(id: 42)
            let profile = response.value
            try expect(response.response.headerFields[.contentType] == "application/x-protobuf", "not protobuf")
            try expect(
                profile.displayName == "Ada Lovelace" && profile.tier == .pro && profile.address?.city == "London"
                    && profile.stats["followers"] == 1843, "decoded \(profile)")
            return
                "\(TourRunner.bytes(response.body.count)) of courier.demo.UserProfile: \"\(profile.displayName)\", "
                + "tier \(profile.tier), \(profile.address?.city ?? "?"), \(profile.stats["followers"] ?? 0) followers"
        }

        await runner.step("CDN cached for a year") {
            let clock = ContinuousClock()
            var start = clock.now
            let first = try await media.download("avatars/42.png")
            let networkTime = TourRunner.format(clock.now - start).trimmingCharacters(in: .whitespaces)
            start = clock.now
            let second = try await media.download("avatars/42.png")
            let cacheTime = TourRunner.format(clock.now - start).trimmingCharacters(in: .whitespaces)
            let hits = fixture.count("/avatars/42.png")
            let cdnSaw = fixture.lastAuthorization("/avatars/42.png") ?? nil
            try expect(cdnSaw == nil, "the CDN (another origin) received Authorization: \(TourRunner.mask(cdnSaw))")
            try expect(!first.isFromCache, "the first download claims to come from the cache")
            try expect(second.isFromCache, "the second download went to the network")
            try expect(hits == 1, "the CDN received \(hits) requests, not 1")
            try expect(first.value == second.value, "the cached body differs")
            return "\(FixtureAPI.cdnHost) → 127.0.0.1 (resolve override), rule: forceLifetime 1 year\n"
                + "1st: network, \(TourRunner.bytes(first.value.count)) in \(networkTime)\n"
                + "2nd: isFromCache, \(cacheTime); the CDN saw \(hits) request, and no Authorization (another origin)"
        }

        await runner.step("retry after 503, 503") {
            let response = try await feed.trending()
            let hits = fixture.count("/feed/trending")
            try expect(response.attempts == 3 && hits == 3, "\(response.attempts) attempts, \(hits) requests")
            return "503, 503, then 200: \(response.attempts) attempts, \(response.value.count) trending posts"
        }

        await runner.step("throttled double tap") {
            _ = try await feed.search("swift")
            var second = "sent"
            do {
                _ = try await feed.search("swift")
            } catch FeedService.Failure.tooFast {
                second = "dropped"
            }
            let hits = fixture.count("/search")
            try expect(second == "dropped" && hits == 1, "second tap \(second); the server saw \(hits) searches")
            return "1st tap sent, 2nd tap dropped as .throttled (1 s interval); server saw \(hits) search"
        }

        await runner.step("batch of 8 with progress") {
            let marks = LockedValue<[String]>([])
            let operations: [@Sendable () async throws -> User] = (1...8).map { id in
                { try await users.user(id: id) }
            }
            let results = await Batch.run(operations, maximumConcurrent: 3) { progress in
                marks.withLock { $0.append("\(progress.completed)/\(progress.total)") }
            }
            let succeeded = results.filter { (try? $0.get()) != nil }.count
            let shown = marks.withLock { $0 }
            try expect(succeeded == 8, "\(succeeded) of 8 succeeded")
            try expect(shown.last == "8/8", "progress ended at \(shown.last ?? "nothing")")
            return "8 users, 3 at a time; progress \(shown.joined(separator: " "))"
        }

        await runner.step("pagination to the end") {
            let before = fixture.count("/feed")
            let posts = try await feed.pages(pageSize: 5).all()
            let pages = fixture.count("/feed") - before
            try expect(posts.count == FixtureAPI.feedLength, "\(posts.count) posts")
            try expect(pages == 3, "\(pages) pages fetched")
            return "\(posts.count) posts in \(pages) pages of 5 (cursor), last: \"\(posts.last?.title ?? "")\""
        }

        await runner.step("expired token → 1 refresh") {
            fixture.expireTokens()
            let paths = ["/users/me", "/feed/unread", "/media/quota", "/users/42/profile"]
            let sentBefore = paths.map(fixture.count)
            let refreshesBefore = fixture.count("/auth/refresh")
            async let me = users.me()
            async let unread = feed.unreadCount()
            async let quota = media.quota()
            async let profile = users.profile(id: 42)
            let (user, unreadCount, left, card) = try await (me, unread, quota, profile)
            let refreshes = fixture.count("/auth/refresh") - refreshesBefore
            let newToken = coordinator.current ?? ""
            let sent = zip(paths.map(fixture.count), sentBefore).map { $0 - $1 }
            try expect(refreshes == 1, "the server saw \(refreshes) refreshes")
            try expect(sent.allSatisfy { $0 == 2 }, "requests per call: \(sent) (expected a 401, then a retry)")
            try expect(newToken != token, "the token did not change")
            try expect(
                user.id == 42 && unreadCount == 3 && left == 100 && card.value.userId == 42, "a call got a wrong answer"
            )
            let now = fixture.lastAuthorization("/users/me") ?? nil
            return "4 concurrent calls got 401 → 1 refresh → 4 retries succeeded; now \(TourRunner.mask(now))"
        }

        await runner.step("envelope + signed requests") {
            let before = fixture.count("/wallet/balance")
            let refreshesBefore = fixture.count("/auth/refresh")
            let busy = try await wallet.balance()
            fixture.expireTokens()
            let expired = try await wallet.balance()
            let refreshes = fixture.count("/auth/refresh") - refreshesBefore
            let sent = fixture.server.recordedRequests(path: "/wallet/balance").dropFirst(before)
            let nonces = Set(sent.compactMap { $0.header("X-Nonce") })
            try expect(busy.attempts == 2 && expired.attempts == 2, "attempts \(busy.attempts), \(expired.attempts)")
            try expect(refreshes == 1, "the server saw \(refreshes) refreshes")
            try expect(sent.count == 4 && nonces.count == 4, "\(sent.count) requests with \(nonces.count) nonces")
            try expect(fixture.verifiedSignatures == 4, "\(fixture.verifiedSignatures) of 4 signatures verified")
            try expect(expired.value.cents == 12_345, "decoded \(expired.value)")
            return "HTTP 200 {code: 50301} → retried; {code: 40101} → 1 refresh → retried with the new token\n"
                + "4 requests, 4 fresh nonces, every X-Signature (HMAC-SHA256) verified by the server; "
                + "balance \(expired.value.cents) \(expired.value.currency) from the envelope's data"
        }

        await runner.step("multipart avatar upload") {
            let image = TestServer.bytePattern(count: 512 * 1024)
            let seen = LockedValue<[Int]>([])
            let receipt = try await media.uploadAvatar(image) { progress in
                guard let fraction = progress.fraction else { return }
                let percent = Int(fraction * 100)
                seen.withLock { if $0.last != percent { $0.append(percent) } }
            }
            let percents = seen.withLock { $0 }
            try expect(receipt.bytes > image.count, "the server read \(receipt.bytes) bytes")
            try expect(percents.last == 100, "progress ended at \(percents.last.map { "\($0)%" } ?? "nothing")")
            let shown = percents.count > 6 ? [percents[0], percents[percents.count / 2], 100] : percents
            return "\(TourRunner.bytes(image.count)) image, \(TourRunner.bytes(receipt.bytes)) multipart body; "
                + "progress \(shown.map { "\($0)%" }.joined(separator: " … ")) (\(percents.count) updates)"
        }

        await runner.step("log out") {
            await auth.signOut()
            var answer = "answered"
            do {
                _ = try await users.me()
            } catch UserService.Failure.signedOut {
                answer = "signedOut"
            }
            let sent = fixture.lastAuthorization("/users/me") ?? nil
            let total = purged.withLock { $0 }
            try expect(!client.isLoggedIn && coordinator.current == nil, "still logged in")
            try expect(sent == nil, "the next request still carried \(TourRunner.mask(sent))")
            try expect(answer == "signedOut", "users.me() \(answer) after logout")
            // The avatar was fetched without the credential (the CDN is not the API's origin):
            // it belongs to no user, so logout keeps it.
            let avatar = try await media.download("avatars/42.png")
            try expect(total == 0, "\(total) cached entries were purged, though none was fetched with the credential")
            try expect(avatar.isFromCache, "the avatar, fetched without the credential, was purged")
            return "courierUserDidLogOut; next request had no Authorization → UserService.Failure.signedOut\n"
                + "the CDN's avatar, fetched without the credential, stays cached"
        }
        await NetworkTour(fixture: fixture).run(runner)
        return runner.failures
    }
}
