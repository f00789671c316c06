import CourierTesting
import Foundation

/// The model of the large JSON benchmarks: one page of an issue tracker's list endpoint, in
/// the shape such APIs answer with (nested users and labels, optional fields that are often
/// `null`, snake_case keys through `CodingKeys`, long text bodies with escapes and non-ASCII).
/// ``body100KB`` is 101,801 bytes and ``body1MB`` 1,016,188 bytes (Benchmarks/report.py says so).
///
/// Timestamps stay strings, as in many API models, so that the benchmarks measure JSON and
/// not date parsing (both decoders hand dates to the same Foundation formatter).
public struct IssuePage: Codable, Sendable, Equatable {
    public struct User: Codable, Sendable, Equatable {
        public var login: String
        public var id: Int
        public var avatarURL: String
        public var siteAdmin: Bool
        public var followers: Int

        enum CodingKeys: String, CodingKey {
            case login, id, followers
            case avatarURL = "avatar_url"
            case siteAdmin = "site_admin"
        }
    }

    public struct Label: Codable, Sendable, Equatable {
        public var id: Int
        public var name: String
        public var color: String
        public var isDefault: Bool
        public var description: String?

        enum CodingKeys: String, CodingKey {
            case id, name, color, description
            case isDefault = "default"
        }

        /// Writes `"description": null` when there is none, as such APIs do.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(name, forKey: .name)
            try container.encode(color, forKey: .color)
            try container.encode(isDefault, forKey: .isDefault)
            try container.encode(description, forKey: .description)
        }
    }

    public struct Milestone: Codable, Sendable, Equatable {
        public var id: Int
        public var title: String
        public var openIssues: Int
        public var closedIssues: Int
        public var dueOn: String?

        enum CodingKeys: String, CodingKey {
            case id, title
            case openIssues = "open_issues"
            case closedIssues = "closed_issues"
            case dueOn = "due_on"
        }
    }

    public struct Reactions: Codable, Sendable, Equatable {
        public var totalCount: Int
        public var plusOne: Int
        public var minusOne: Int
        public var laugh: Int
        public var heart: Int

        enum CodingKeys: String, CodingKey {
            case laugh, heart
            case totalCount = "total_count"
            case plusOne = "+1"
            case minusOne = "-1"
        }
    }

    public struct Issue: Codable, Sendable, Equatable {
        public var id: Int
        public var number: Int
        public var title: String
        public var state: String
        public var locked: Bool
        public var user: User
        public var labels: [Label]
        public var assignees: [User]
        public var milestone: Milestone?
        public var comments: Int
        public var createdAt: String
        public var updatedAt: String
        public var closedAt: String?
        public var body: String?
        public var reactions: Reactions
        public var score: Double

        enum CodingKeys: String, CodingKey {
            case id, number, title, state, locked, user, labels, assignees, milestone, comments, body, reactions, score
            case createdAt = "created_at"
            case updatedAt = "updated_at"
            case closedAt = "closed_at"
        }

        /// Writes `null` for an absent milestone, closing date or body, as such APIs do.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(number, forKey: .number)
            try container.encode(title, forKey: .title)
            try container.encode(state, forKey: .state)
            try container.encode(locked, forKey: .locked)
            try container.encode(user, forKey: .user)
            try container.encode(labels, forKey: .labels)
            try container.encode(assignees, forKey: .assignees)
            try container.encode(milestone, forKey: .milestone)
            try container.encode(comments, forKey: .comments)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(updatedAt, forKey: .updatedAt)
            try container.encode(closedAt, forKey: .closedAt)
            try container.encode(body, forKey: .body)
            try container.encode(reactions, forKey: .reactions)
            try container.encode(score, forKey: .score)
        }
    }

    public var page: Int
    public var perPage: Int
    public var totalCount: Int
    public var next: String?
    public var items: [Issue]

    enum CodingKeys: String, CodingKey {
        case page, next, items
        case perPage = "per_page"
        case totalCount = "total_count"
    }

    /// A page of `count` issues, the same for every run (a fixed pseudo-random sequence).
    public static func sample(issues count: Int) -> IssuePage {
        var random = SplitMix64(seed: 0x00C0_FFEE)
        let logins = ["octocat", "hubot", "mona", "jane-appleseed", "dev_ops", "renée", "zoë.k", "li-wei"]
        let users = logins.enumerated().map { index, login in
            User(
                login: login, id: 583_231 + index * 7919,
                avatarURL: "https://avatars.example.com/u/\(583_231 + index * 7919)?v=4",
                siteAdmin: index == 0, followers: Int(random.next() % 20_000))
        }
        let labelNames = [
            ("bug", "d73a4a", "Something isn't working"), ("enhancement", "a2eeef", "New feature or request"),
            ("documentation", "0075ca", nil), ("good first issue", "7057ff", "Good for newcomers"),
            ("help wanted", "008672", nil), ("performance", "fbca04", "Faster, smaller, \"cheaper\""),
        ]
        let labels = labelNames.enumerated().map { index, label in
            Label(
                id: 208_045_946 + index, name: label.0, color: label.1, isDefault: index < 3,
                description: label.2)
        }
        let milestones = (0..<3).map { index in
            Milestone(
                id: 9_000 + index, title: "v\(index + 1).0", openIssues: Int(random.next() % 50),
                closedIssues: Int(random.next() % 400), dueOn: index == 2 ? nil : "2026-0\(index + 3)-01T07:00:00Z")
        }
        let words = [
            "request", "timeout", "cache", "decoder", "the", "a", "when", "after", "retry", "header", "body",
            "crash", "Linux", "TLS", "proxy", "redirect", "cookie", "stream", "upload", "progress", "café",
            "naïve", "日本語", "emoji 🚀", "path/to/file", "\"quoted\"", "tab\tseparated", "back\\slash",
        ]
        func sentence(_ length: Int) -> String {
            (0..<length).map { _ in words[Int(random.next() % UInt64(words.count))] }.joined(separator: " ")
        }
        func timestamp(_ base: Int) -> String {
            let day = 1 + base % 28
            let hour = base % 24
            let minute = (base * 7) % 60
            let two = { (x: Int) in x < 10 ? "0\(x)" : "\(x)" }
            return "2025-\(two(1 + base % 12))-\(two(day))T\(two(hour)):\(two(minute)):\(two(base % 60))Z"
        }
        let items = (0..<count).map { index -> Issue in
            let closed = random.next() % 3 == 0
            let labelCount = Int(random.next() % 4)
            let assigneeCount = Int(random.next() % 3)
            let bodyParagraphs = Int(random.next() % 4)
            return Issue(
                id: 1_000_000_000 + index * 37, number: 4_000 + index, title: sentence(4 + Int(random.next() % 8)),
                state: closed ? "closed" : "open", locked: random.next() % 10 == 0,
                user: users[Int(random.next() % UInt64(users.count))],
                labels: (0..<labelCount).map { _ in labels[Int(random.next() % UInt64(labels.count))] },
                assignees: (0..<assigneeCount).map { _ in users[Int(random.next() % UInt64(users.count))] },
                milestone: random.next() % 2 == 0 ? milestones[Int(random.next() % 3)] : nil,
                comments: Int(random.next() % 120), createdAt: timestamp(index * 13), updatedAt: timestamp(index * 17),
                closedAt: closed ? timestamp(index * 19) : nil,
                body: bodyParagraphs == 0
                    ? nil
                    : (0..<bodyParagraphs).map { _ in sentence(12 + Int(random.next() % 30)) }.joined(
                        separator: "\n\n"),
                reactions: Reactions(
                    totalCount: Int(random.next() % 40), plusOne: Int(random.next() % 20),
                    minusOne: Int(random.next() % 5),
                    laugh: Int(random.next() % 5), heart: Int(random.next() % 10)),
                score: Double(random.next() % 1_000_000) / 1000)
        }
        return IssuePage(
            page: 1, perPage: count, totalCount: count * 12,
            next: "https://api.example.com/repos/courier/courier/issues?page=2&per_page=\(count)", items: items)
    }

    /// About 100 KB of JSON (90 issues).
    public static let sample100KB = sample(issues: 90)
    /// About 1 MB of JSON (900 issues).
    public static let sample1MB = sample(issues: 900)

    /// The JSON of ``sample100KB``, written by Foundation with sorted keys.
    public static let body100KB: Data = json(sample100KB)
    /// The JSON of ``sample1MB``, written by Foundation with sorted keys.
    public static let body1MB: Data = json(sample1MB)

    private static func json(_ page: IssuePage) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try! encoder.encode(page)  // plain strings, integers and finite doubles: cannot fail
    }
}
