import Foundation
struct Order: Codable { var id: Int }
