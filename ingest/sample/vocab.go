package sample

// The vocabulary keywords are built from. Every entry is already in the
// normalized form of kw.NormalizeKeyword (NFKC, lower case, single spaces), so a keyword
// assembled from entries is its own normalization and uniqueness can be
// checked on the raw text.

// noun is a head term with its plural (the usual query form) and singular.
// An empty singular means the term has a single form.
type noun struct{ plural, singular string }

// category groups head terms with the qualifiers, brands and attributes that
// read naturally with them, and the price level of its clicks.
type category struct {
	name   string
	nouns  []noun
	quals  []string // qualifiers that make a topic ("trail", "waterproof")
	brands []string // brands that make a topic ("nike")
	attrs  []string // attributes that narrow a group ("black", "size 10")
	cpc    float64  // typical top-of-page bid in USD
}

var enCategories = []category{
	{"footwear", []noun{{"running shoes", "running shoe"}, {"hiking boots", "hiking boot"}, {"sneakers", "sneaker"}, {"sandals", "sandal"}, {"walking shoes", "walking shoe"}, {"trail shoes", "trail shoe"}, {"slippers", "slipper"}, {"rain boots", "rain boot"}, {"basketball shoes", "basketball shoe"}, {"work boots", "work boot"}, {"loafers", "loafer"}, {"football boots", "football boot"}},
		[]string{"waterproof", "leather", "wide", "lightweight", "vegan", "kids", "womens", "mens", "cushioned", "minimalist", "winter", "summer", "orthopedic", "non slip"},
		[]string{"nike", "adidas", "asics", "brooks", "hoka", "new balance", "salomon", "merrell", "on cloud", "puma"},
		[]string{"black", "white", "red", "blue", "pink", "size 8", "size 10", "size 12", "wide fit", "with arch support"}, 0.9},
	{"electronics", []noun{{"laptops", "laptop"}, {"headphones", ""}, {"earbuds", ""}, {"smartphones", "smartphone"}, {"tablets", "tablet"}, {"monitors", "monitor"}, {"keyboards", "keyboard"}, {"smartwatches", "smartwatch"}, {"tvs", "tv"}, {"speakers", "speaker"}, {"cameras", "camera"}, {"routers", "router"}},
		[]string{"gaming", "wireless", "noise cancelling", "4k", "refurbished", "portable", "budget", "bluetooth", "mechanical", "curved", "waterproof", "student", "business", "oled"},
		[]string{"apple", "samsung", "sony", "dell", "lenovo", "hp", "asus", "bose", "lg", "logitech", "google pixel", "xiaomi"},
		[]string{"under 500", "under 1000", "under 100", "black", "white", "with usb c", "16gb", "32gb", "1tb", "for video editing"}, 1.6},
	{"kitchen", []noun{{"coffee makers", "coffee maker"}, {"air fryers", "air fryer"}, {"blenders", "blender"}, {"knives", "knife"}, {"frying pans", "frying pan"}, {"espresso machines", "espresso machine"}, {"toasters", "toaster"}, {"stand mixers", "stand mixer"}, {"rice cookers", "rice cooker"}, {"kettles", "kettle"}, {"cutting boards", "cutting board"}, {"pressure cookers", "pressure cooker"}},
		[]string{"stainless steel", "cast iron", "non stick", "electric", "small", "large", "ceramic", "compact", "commercial", "smart", "glass", "copper"},
		[]string{"ninja", "breville", "kitchenaid", "cuisinart", "delonghi", "instant pot", "le creuset", "nespresso", "philips", "smeg"},
		[]string{"black", "white", "red", "with grinder", "with timer", "for two", "8 quart", "5 litre", "dishwasher safe", "on sale"}, 0.8},
	{"food", []noun{{"pizza", ""}, {"sushi", ""}, {"tacos", "taco"}, {"burgers", "burger"}, {"pancakes", "pancake"}, {"banana bread", ""}, {"lasagna", ""}, {"ramen", ""}, {"cheesecake", ""}, {"smoothies", "smoothie"}, {"crème brûlée", ""}, {"açaí bowls", "açaí bowl"}, {"jalapeño poppers", "jalapeño popper"}, {"café latte", ""}},
		[]string{"vegan", "gluten free", "keto", "homemade", "easy", "healthy", "spicy", "chocolate", "vegetarian", "low carb", "protein", "frozen"},
		[]string{"domino's", "costco", "trader joe's", "whole foods", "tesco", "starbucks"},
		[]string{"recipe", "calories", "delivery", "without eggs", "in air fryer", "for kids", "for dinner", "with chicken", "with cheese", "nutrition facts"}, 0.5},
	{"fitness", []noun{{"yoga mats", "yoga mat"}, {"dumbbells", "dumbbell"}, {"treadmills", "treadmill"}, {"exercise bikes", "exercise bike"}, {"resistance bands", "resistance band"}, {"kettlebells", "kettlebell"}, {"protein powders", "protein powder"}, {"rowing machines", "rowing machine"}, {"pull up bars", "pull up bar"}, {"foam rollers", "foam roller"}, {"gym bags", "gym bag"}, {"jump ropes", "jump rope"}},
		[]string{"adjustable", "folding", "home", "heavy", "non slip", "thick", "vegan", "whey", "smart", "compact", "commercial", "cheap"},
		[]string{"peloton", "bowflex", "nordictrack", "lululemon", "optimum nutrition", "myprotein", "rogue", "concept2"},
		[]string{"for beginners", "for women", "for men", "workout", "exercises", "set", "20 kg", "50 lb", "with stand", "for home gym"}, 0.9},
	{"travel", []noun{{"flights", "flight"}, {"hotels", "hotel"}, {"car rentals", "car rental"}, {"cruises", "cruise"}, {"suitcases", "suitcase"}, {"backpacks", "backpack"}, {"travel insurance", ""}, {"vacation rentals", "vacation rental"}, {"train tickets", "train ticket"}, {"campsites", "campsite"}, {"hostels", "hostel"}, {"tours", "tour"}},
		[]string{"cheap", "last minute", "luxury", "all inclusive", "family", "carry on", "one way", "direct", "pet friendly", "budget", "beach", "ski"},
		[]string{"expedia", "booking.com", "airbnb", "ryanair", "delta", "hilton", "marriott", "samsonite", "easyjet", "lufthansa"},
		[]string{"to paris", "to london", "to new york", "to tokyo", "to barcelona", "to rome", "in december", "for two", "this weekend", "with free cancellation"}, 1.2},
	{"home", []noun{{"sofas", "sofa"}, {"mattresses", "mattress"}, {"desks", "desk"}, {"office chairs", "office chair"}, {"bookshelves", "bookshelf"}, {"rugs", "rug"}, {"curtains", "curtain"}, {"lamps", "lamp"}, {"bed frames", "bed frame"}, {"dining tables", "dining table"}, {"wardrobes", "wardrobe"}, {"pillows", "pillow"}},
		[]string{"ergonomic", "standing", "memory foam", "velvet", "leather", "wooden", "modern", "vintage", "corner", "king size", "queen size", "outdoor"},
		[]string{"ikea", "wayfair", "west elm", "casper", "tempur", "herman miller", "pottery barn", "habitat"},
		[]string{"grey", "white", "black", "green", "small", "large", "for small spaces", "for back pain", "with storage", "under 200"}, 1.1},
	{"finance", []noun{{"credit cards", "credit card"}, {"savings accounts", "savings account"}, {"mortgages", "mortgage"}, {"personal loans", "personal loan"}, {"car insurance", ""}, {"life insurance", ""}, {"stocks", "stock"}, {"index funds", "index fund"}, {"crypto exchanges", "crypto exchange"}, {"tax software", ""}, {"pension plans", "pension plan"}, {"bank accounts", "bank account"}},
		[]string{"high yield", "low interest", "fixed rate", "no fee", "business", "student", "joint", "online", "secured", "travel", "cashback", "dividend"},
		[]string{"chase", "amex", "barclays", "hsbc", "vanguard", "fidelity", "revolut", "paypal", "coinbase", "turbotax"},
		[]string{"calculator", "rates", "for bad credit", "for beginners", "for students", "with no credit check", "comparison", "requirements", "interest rate", "fees"}, 4.5},
	{"pets", []noun{{"dog food", ""}, {"cat food", ""}, {"dog beds", "dog bed"}, {"cat trees", "cat tree"}, {"dog toys", "dog toy"}, {"litter boxes", "litter box"}, {"dog harnesses", "dog harness"}, {"aquariums", "aquarium"}, {"bird cages", "bird cage"}, {"dog crates", "dog crate"}, {"pet insurance", ""}, {"flea treatments", "flea treatment"}},
		[]string{"grain free", "orthopedic", "self cleaning", "indestructible", "no pull", "wet", "dry", "raw", "senior", "puppy", "kitten", "automatic"},
		[]string{"purina", "royal canin", "hills", "kong", "blue buffalo", "whiskas", "pedigree", "chewy"},
		[]string{"for small dogs", "for large dogs", "for puppies", "for senior cats", "for allergies", "reviews uk", "bulk", "10kg", "on subscription", "vet recommended"}, 0.7},
	{"garden", []noun{{"lawn mowers", "lawn mower"}, {"garden hoses", "garden hose"}, {"raised beds", "raised bed"}, {"greenhouses", "greenhouse"}, {"hedge trimmers", "hedge trimmer"}, {"leaf blowers", "leaf blower"}, {"garden furniture", ""}, {"bbq grills", "bbq grill"}, {"plant pots", "plant pot"}, {"seeds", ""}, {"compost bins", "compost bin"}, {"fire pits", "fire pit"}},
		[]string{"cordless", "electric", "petrol", "robotic", "expandable", "wooden", "metal", "solar", "self propelled", "gas", "charcoal", "heirloom"},
		[]string{"stihl", "husqvarna", "bosch", "ryobi", "weber", "traeger", "ego", "makita"},
		[]string{"for small gardens", "for balcony", "for vegetables", "for tomatoes", "with bag", "lightweight", "quiet", "cover", "parts", "on sale"}, 0.8},
	{"education", []noun{{"online courses", "online course"}, {"coding bootcamps", "coding bootcamp"}, {"language apps", "language app"}, {"mba programs", "mba program"}, {"tutoring", ""}, {"scholarships", "scholarship"}, {"certifications", "certification"}, {"textbooks", "textbook"}, {"universities", "university"}, {"summer camps", "summer camp"}, {"typing tests", "typing test"}, {"math worksheets", "math worksheet"}},
		[]string{"free", "online", "part time", "accredited", "python", "data science", "spanish", "french", "nursing", "executive", "beginner", "advanced"},
		[]string{"coursera", "udemy", "duolingo", "khan academy", "edx", "babbel", "harvard", "stanford"},
		[]string{"with certificate", "for adults", "for kids", "for beginners", "cost", "requirements", "near me", "in 2026", "ranking", "deadline"}, 2.2},
	{"auto", []noun{{"used cars", "used car"}, {"car tires", "car tire"}, {"electric cars", "electric car"}, {"car batteries", "car battery"}, {"motorcycles", "motorcycle"}, {"car seats", "car seat"}, {"dash cams", "dash cam"}, {"car wax", ""}, {"brake pads", "brake pad"}, {"roof racks", "roof rack"}, {"car chargers", "car charger"}, {"suvs", "suv"}},
		[]string{"all season", "winter", "hybrid", "cheap", "certified", "family", "compact", "luxury", "off road", "convertible", "infant", "booster"},
		[]string{"toyota", "tesla", "honda", "ford", "bmw", "volkswagen", "michelin", "bosch", "hyundai", "kia"},
		[]string{"for sale", "price", "lease deals", "under 10000", "range", "reliability", "installation", "replacement cost", "size chart", "warranty"}, 1.9},
	{"beauty", []noun{{"moisturizers", "moisturizer"}, {"sunscreens", "sunscreen"}, {"shampoos", "shampoo"}, {"hair dryers", "hair dryer"}, {"perfumes", "perfume"}, {"lipsticks", "lipstick"}, {"face masks", "face mask"}, {"serums", "serum"}, {"electric razors", "electric razor"}, {"nail polish", ""}, {"eye creams", "eye cream"}, {"hair straighteners", "hair straightener"}},
		[]string{"organic", "vitamin c", "retinol", "sulfate free", "mineral", "tinted", "anti aging", "hydrating", "matte", "long lasting", "ionic", "fragrance free"},
		[]string{"cerave", "la roche posay", "dyson", "olaplex", "the ordinary", "l'oréal", "clinique", "chanel", "braun", "nivea"},
		[]string{"for dry skin", "for oily skin", "for sensitive skin", "for curly hair", "for men", "spf 50", "travel size", "dupe", "ingredients", "gift set"}, 1.0},
	{"games", []noun{{"board games", "board game"}, {"video games", "video game"}, {"puzzles", "puzzle"}, {"lego sets", "lego set"}, {"gaming chairs", "gaming chair"}, {"controllers", "controller"}, {"trading cards", "trading card"}, {"pokémon cards", "pokémon card"}, {"chess sets", "chess set"}, {"card games", "card game"}, {"gaming pcs", "gaming pc"}, {"vr headsets", "vr headset"}},
		[]string{"cooperative", "strategy", "multiplayer", "retro", "wooden", "1000 piece", "family", "two player", "party", "horror", "open world", "wireless"},
		[]string{"nintendo", "playstation", "xbox", "hasbro", "ravensburger", "steam", "razer", "meta quest"},
		[]string{"for adults", "for kids", "for 2 players", "release date", "rules", "price", "walkthrough", "tier list", "bundle", "black friday"}, 0.6},
	{"health", []noun{{"vitamins", "vitamin"}, {"blood pressure monitors", "blood pressure monitor"}, {"hearing aids", "hearing aid"}, {"glasses", ""}, {"contact lenses", "contact lens"}, {"sleep aids", "sleep aid"}, {"probiotics", "probiotic"}, {"thermometers", "thermometer"}, {"massage guns", "massage gun"}, {"knee braces", "knee brace"}, {"dentists", "dentist"}, {"physiotherapists", "physiotherapist"}},
		[]string{"prescription", "natural", "digital", "daily", "blue light", "rechargeable", "over the counter", "emergency", "pediatric", "chewable", "infrared", "compression"},
		[]string{"nature made", "omron", "oura", "theragun", "acuvue", "specsavers", "warby parker", "philips"},
		[]string{"side effects", "dosage", "for women", "for men", "for kids", "cost", "covered by insurance", "reviews uk", "open on sunday", "for seniors"}, 2.6},
	{"jobs", []noun{{"remote jobs", "remote job"}, {"nursing jobs", "nursing job"}, {"teaching jobs", "teaching job"}, {"internships", "internship"}, {"warehouse jobs", "warehouse job"}, {"software engineer jobs", "software engineer job"}, {"driver jobs", "driver job"}, {"resume templates", "resume template"}, {"cover letters", "cover letter"}, {"salaries", "salary"}, {"résumé examples", "résumé example"}, {"job interviews", "job interview"}},
		[]string{"part time", "entry level", "high paying", "weekend", "summer", "government", "night shift", "freelance", "senior", "graduate", "seasonal", "contract"},
		[]string{"amazon", "google", "indeed", "linkedin", "walmart", "nhs", "ups", "deloitte"},
		[]string{"no experience", "hiring now", "near me", "salary", "questions", "tips", "for students", "from home", "with visa sponsorship", "template"}, 1.4},
}

// deCategory adds German head terms, so German data has the umlauts and
// compounds a German planner export is full of.
var deCategory = category{"deutsch", []noun{{"laufschuhe", ""}, {"wanderschuhe", ""}, {"kaffeemaschinen", "kaffeemaschine"}, {"staubsauger", ""}, {"kopfhörer", ""}, {"fahrräder", "fahrrad"}, {"küchenmaschinen", "küchenmaschine"}, {"waschmaschinen", "waschmaschine"}, {"gartenmöbel", ""}, {"schlafsäcke", "schlafsack"}, {"brötchen", ""}, {"müsli", ""}, {"fußballschuhe", ""}, {"bürostühle", "bürostuhl"}},
	[]string{"günstige", "gebrauchte", "elektrische", "kabellose", "wasserdichte", "große", "kleine", "leise", "vegane", "süße", "weiße", "schwarze"},
	[]string{"bosch", "miele", "siemens", "tchibo", "aldi", "lidl", "dm", "rossmann"},
	[]string{"für damen", "für herren", "für kinder", "größe 42", "mit zubehör", "aus holz", "in weiß", "rezept", "öffnungszeiten", "gebraucht"}, 0.9}

// modifier turns a topic phrase into a group's base keyword. format holds
// one "%" where the topic phrase goes; question modifiers take the
// question decorations instead of the shopping ones.
type modifier struct {
	format   string
	question bool
}

var enModifiers = []modifier{
	{"%", false}, {"best %", false}, {"cheap %", false}, {"% near me", false}, {"% for women", false},
	{"% for men", false}, {"% for kids", false}, {"% 2026", false}, {"% review", false}, {"% sale", false},
	{"% price", false}, {"% deals", false}, {"% coupon", false}, {"% black friday", false}, {"% clearance", false},
	{"% outlet", false}, {"% for beginners", false}, {"used %", false}, {"new %", false}, {"% set", false},
	{"% brands", false}, {"% alternatives", false}, {"% comparison", false}, {"% rental", false}, {"% repair", false},
	{"% accessories", false}, {"% replacement", false}, {"% warranty", false}, {"% size guide", false}, {"% amazon", false},
	{"% gift ideas", false}, {"% discount code", false}, {"% store", false}, {"% for seniors", false}, {"% for travel", false},
	{"luxury %", false}, {"premium %", false}, {"% uk", false}, {"% usa", false}, {"% in stock", false},
	{"how to choose %", true}, {"how to clean %", true}, {"how to use %", true}, {"what are %", true}, {"are % worth it", true},
	{"how much do % cost", true}, {"why are % so expensive", true}, {"where to buy %", true}, {"how long do % last", true}, {"which % to buy", true},
	{"% pros and cons", true}, {"% meaning", true}, {"% history", true}, {"when to replace %", true}, {"how to store %", true},
	{"is it worth buying %", true}, {"% buying guide", true}, {"% explained", true}, {"% tips", true}, {"% ideas", true},
}

var deModifiers = []modifier{
	{"% kaufen", false}, {"% günstig", false}, {"% test", false}, {"% testsieger", false}, {"% angebot", false},
	{"% in der nähe", false}, {"% für damen", false}, {"% für herren", false}, {"% gebraucht", false}, {"% vergleich", false},
	{"% stiftung warentest", false}, {"% reduziert", false}, {"% größentabelle", false}, {"beste %", false}, {"% erfahrungen", false},
	{"wie reinigt man %", true}, {"was kosten %", true}, {"% worauf achten", true}, {"welche % sind die besten", true}, {"% selber machen", true},
}

// Decorations make the members of one intent group from its base keyword:
// the same need asked in slightly different words.
var (
	enShopPrefixes     = []string{"", "best", "top", "buy", "cheap", "good", "affordable", "top rated"}
	enShopSuffixes     = []string{"", "online", "2026", "sale", "deals", "reviews", "reddit", "near me", "for sale"}
	enQuestionPrefixes = []string{""}
	enQuestionSuffixes = []string{"", "reddit", "guide", "tips", "easy", "at home", "step by step", "uk", "youtube", "quora"}
	deShopPrefixes     = []string{"", "beste", "günstige", "top"}
	deShopSuffixes     = []string{"", "kaufen", "online", "test", "2026", "angebot", "günstig", "vergleich", "bestellen"}
)

// siteStems and siteSuffixes make the synthetic domains that rank for topics.
var (
	siteStems    = []string{"run", "gear", "shop", "home", "tech", "kitchen", "fit", "travel", "money", "pet", "garden", "learn", "auto", "beauty", "play", "health", "career", "daily", "smart", "urban", "green", "blue", "north", "happy", "bright", "true", "prime", "good", "top", "best", "clever", "simple", "pro", "mega", "nova", "zen", "bold", "swift", "alpha", "local"}
	siteSuffixes = []string{"guide", "hub", "world", "lab", "review", "mag", "store", "zone", "hq", "insider", "expert", "base", "spot", "central", "journal", "depot", "list", "digest", "today", "planet"}
)

// hubSite is a very popular domain. tld is used with the country's own
// domain where the site has one ("amazon.co.uk").
type hubSite struct {
	name  string // second-level label
	www   bool
	local bool // has a country domain
	kind  int  // path style, see hubPath
}

var hubSites = []hubSite{
	{"wikipedia", false, false, hubWiki}, {"amazon", true, true, hubProduct}, {"youtube", true, false, hubVideo},
	{"reddit", true, false, hubForum}, {"pinterest", true, true, hubPin}, {"ebay", true, true, hubProduct},
	{"quora", true, false, hubQuestion}, {"facebook", true, false, hubPage}, {"instagram", true, false, hubPage},
	{"tiktok", true, false, hubVideo}, {"walmart", true, false, hubProduct}, {"etsy", true, false, hubProduct},
	{"nytimes", true, false, hubArticle}, {"forbes", true, false, hubArticle}, {"bbc", true, true, hubArticle},
	{"target", true, false, hubProduct}, {"bestbuy", true, false, hubProduct}, {"yelp", true, false, hubPage},
	{"tripadvisor", true, true, hubPage}, {"healthline", true, false, hubArticle}, {"webmd", true, false, hubArticle},
	{"nerdwallet", true, false, hubArticle}, {"medium", false, false, hubArticle}, {"linkedin", true, false, hubPage},
	{"github", false, false, hubPage}, {"imdb", true, false, hubPage}, {"apple", true, false, hubPage},
	{"google", false, false, hubPage}, {"trustpilot", true, true, hubPage}, {"which", true, false, hubArticle},
}

const (
	hubWiki = iota
	hubProduct
	hubVideo
	hubForum
	hubPin
	hubQuestion
	hubPage
	hubArticle
)
