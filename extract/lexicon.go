package extract

import (
	"strings"

	"github.com/memor-db/memor/lang/en"
)

// The word lists the rule extractor matches against. All entries are lower
// case; multi-word entries are matched longest first.

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// relations maps a kinship or social noun to its predicate.
var relations = en.Relations()

// relationAdjectives may stand between "my" and the relation noun.
var relationAdjectives = set("older", "younger", "little", "big", "baby", "twin", "elder",
	"eldest", "oldest", "youngest", "best", "close", "good", "old", "dear", "childhood", "romantic",
	"new", "step", "half", "lovely", "awesome", "former", "closest", "only")

// pets lists pet kinds and breeds (singular).
var pets = set("dog", "cat", "puppy", "kitten", "hamster", "rabbit", "bunny", "parrot",
	"bird", "fish", "goldfish", "turtle", "tortoise", "snake", "lizard", "gecko", "ferret",
	"horse", "pony", "iguana", "chinchilla", "hedgehog", "rat", "mouse", "budgie", "canary",
	"cockatiel", "labrador", "lab", "poodle", "beagle", "bulldog", "husky", "corgi",
	"dachshund", "chihuahua", "pug", "retriever", "terrier", "spaniel", "collie",
	"rottweiler", "doberman", "greyhound", "whippet", "labradoodle", "goldendoodle",
	"cockapoo", "schnauzer", "pomeranian", "kitty", "pup", "tabby", "parakeet", "axolotl",
	"golden retriever", "labrador retriever", "german shepherd", "french bulldog",
	"border collie", "shih tzu", "pit bull", "great dane", "jack russell", "cocker spaniel",
	"maine coon", "guinea pig", "bearded dragon", "siamese cat", "persian cat",
	"tabby cat", "rescue dog", "rescue cat", "ball python", "bernese mountain dog",
	"australian shepherd", "yorkshire terrier", "boston terrier", "sphynx cat")

// instruments lists instruments (singular, as played).
var instruments = set("piano", "guitar", "violin", "cello", "viola", "drums", "drum", "bass",
	"saxophone", "sax", "trumpet", "flute", "clarinet", "ukulele", "harp", "banjo", "mandolin",
	"accordion", "harmonica", "trombone", "oboe", "bassoon", "keyboard", "keyboards", "organ",
	"tuba", "synthesizer", "synth", "sitar", "tabla", "bagpipes", "xylophone", "marimba",
	"recorder", "harpsichord", "cajon", "didgeridoo",
	"electric guitar", "acoustic guitar", "bass guitar", "classical guitar", "double bass",
	"french horn", "steel drums", "grand piano", "upright bass", "electric bass")

// instrumentalists maps a player noun to the instrument.
var instrumentalists = map[string]string{
	"guitarist": "guitar", "pianist": "piano", "violinist": "violin", "cellist": "cello",
	"drummer": "drums", "bassist": "bass", "saxophonist": "saxophone", "trumpeter": "trumpet",
	"flautist": "flute", "flutist": "flute", "harpist": "harp", "clarinetist": "clarinet",
	"violist": "viola", "organist": "organ", "ukulele player": "ukulele",
}

// languages lists languages (lower case; the text must capitalise them).
var languages = set("english", "spanish", "french", "german", "italian", "portuguese",
	"mandarin", "chinese", "cantonese", "japanese", "korean", "hindi", "arabic", "russian",
	"dutch", "swedish", "norwegian", "danish", "finnish", "polish", "turkish", "greek",
	"hebrew", "vietnamese", "thai", "indonesian", "malay", "tagalog", "filipino", "swahili",
	"bengali", "urdu", "punjabi", "tamil", "telugu", "marathi", "kannada", "malayalam",
	"gujarati", "persian", "farsi", "ukrainian", "czech", "slovak", "hungarian", "romanian",
	"catalan", "basque", "irish", "welsh", "gaelic", "latin", "icelandic", "serbian",
	"croatian", "bulgarian", "lithuanian", "latvian", "estonian", "slovenian", "albanian",
	"armenian", "georgian", "amharic", "yoruba", "igbo", "hausa", "zulu", "xhosa",
	"afrikaans", "nepali", "sinhala", "burmese", "khmer", "lao", "mongolian", "kazakh",
	"uzbek", "esperanto", "asl", "yiddish", "quechua", "maori", "hawaiian", "sanskrit")

// diets maps diet words to the diet value.
var diets = map[string]string{
	"vegan": "vegan", "vegetarian": "vegetarian", "veggie": "vegetarian",
	"pescatarian": "pescatarian", "pescetarian": "pescatarian", "carnivore": "carnivore",
	"keto": "keto", "paleo": "paleo", "flexitarian": "flexitarian",
	"plant-based": "plant-based", "gluten-free": "gluten-free", "halal": "halal",
	"kosher": "kosher", "raw vegan": "raw vegan", "lacto-vegetarian": "lacto-vegetarian",
	"ovo-vegetarian": "ovo-vegetarian", "fruitarian": "fruitarian",
}

// deviceBrands start a device name.
var deviceBrands = set("iphone", "pixel", "galaxy", "samsung", "android", "oneplus",
	"xiaomi", "redmi", "huawei", "motorola", "moto", "nokia", "blackberry", "xperia",
	"fairphone", "oppo", "vivo", "realme", "honor", "google")

// deviceModel words may continue a device name after the brand.
var deviceModel = set("pro", "max", "plus", "ultra", "mini", "se", "xl", "fold", "flip",
	"lite", "note", "edge", "fe", "5g", "xr", "xs", "x", "a", "galaxy", "pixel", "razr", "phone")

// jobs lists head nouns of job titles.
var jobs = set("engineer", "developer", "programmer", "designer", "teacher", "professor",
	"nurse", "doctor", "physician", "surgeon", "dentist", "lawyer", "attorney", "accountant",
	"architect", "manager", "director", "consultant", "analyst", "scientist", "researcher",
	"writer", "journalist", "editor", "chef", "cook", "baker", "pilot", "pharmacist",
	"therapist", "psychologist", "psychiatrist", "electrician", "plumber", "carpenter",
	"mechanic", "firefighter", "paramedic", "officer", "cashier", "waiter", "waitress",
	"bartender", "barista", "salesperson", "intern", "freelancer", "artist", "musician",
	"photographer", "veterinarian", "vet", "librarian", "ceo", "cto", "cfo", "coo", "founder",
	"co-founder", "cofounder", "recruiter", "translator", "marketer", "entrepreneur",
	"realtor", "banker", "economist", "tutor", "coach", "trainer", "secretary",
	"receptionist", "administrator", "technician", "sre", "devops", "lecturer", "actor",
	"actress", "producer", "student", "paralegal", "midwife", "optometrist", "surveyor",
	"assistant", "specialist", "coordinator", "supervisor", "executive", "officer",
	"strategist", "copywriter", "illustrator", "animator", "statistician", "mathematician",
	"physicist", "chemist", "biologist", "geologist", "historian", "teller", "clerk",
	"driver", "farmer", "soldier", "sergeant", "detective", "judge", "professor",
	"postdoc", "lead", "vp", "president", "nanny", "caregiver", "hairdresser", "stylist")

// studentNouns make "a X at Y" a studies_at fact.
var studentNouns = set("student", "freshman", "sophomore", "undergrad", "undergraduate",
	"grad", "postgrad", "phd", "doctoral", "masters", "master's")

// foods are head nouns that make a like a likes_food.
var foods = set("food", "foods", "cuisine", "pizza", "sushi", "pasta", "tacos", "taco",
	"burgers", "burger", "ramen", "curry", "curries", "steak", "chocolate", "cream",
	"cheese", "bread", "noodles", "dumplings", "pho", "burritos", "burrito", "sandwiches",
	"sandwich", "salad", "salads", "seafood", "chicken", "bbq", "barbecue", "pancakes",
	"waffles", "cake", "cakes", "cookies", "donuts", "doughnuts", "fries", "lasagna",
	"risotto", "sum", "kimchi", "falafel", "hummus", "avocado", "avocados", "mango", "mangoes",
	"strawberries", "apples", "bananas", "coffee", "tea", "wine", "beer", "dessert",
	"desserts", "pie", "pies", "soup", "soups", "rice", "eggs", "bacon", "fish", "shrimp",
	"lobster", "oysters", "tofu", "paneer", "biryani", "dosa", "samosas", "paella", "tapas",
	"croissants", "bagels", "chips", "popcorn", "candy", "fruit", "vegetables", "berries",
	"peaches", "cherries", "grapes", "oranges", "watermelon", "pineapple", "nachos",
	"enchiladas", "quesadillas", "gelato", "cupcakes", "brownies", "pretzels", "spaghetti",
	"kebab", "kebabs", "shawarma", "gyros", "poke", "udon", "tempura", "dim", "chai", "matcha")

// fillers are adverbs dropped before matching.
var fillers = set("just", "really", "also", "recently", "finally", "actually", "currently",
	"officially", "already", "totally", "absolutely", "definitely", "basically", "honestly",
	"truly", "still", "now", "even", "seriously", "literally", "happily", "proudly",
	"newly", "lately", "so", "well", "oh", "hey", "btw", "anyway", "anyways", "um", "uh",
	"yeah", "yes", "ok", "okay", "fyi", "again", "too", "originally",
	"absolutely", "sadly", "unfortunately", "luckily", "fortunately", "somehow", "kinda",
	"sorta", "especially", "particularly")

// hedges lower the confidence of what follows.
var hedges = set("probably", "maybe", "perhaps", "possibly", "apparently", "supposedly")

// modals mark a clause as not a statement of fact.
var modals = set("would", "will", "could", "should", "might", "shall", "must", "want",
	"wants", "wanted", "plan", "plans", "planning", "planned", "hope", "hoping", "hopes",
	"hoped", "wish", "considering", "consider", "thinking", "intend", "intending", "trying",
	"try", "tried", "going", "need", "needs", "dreaming", "dream", "hopefully", "someday",
	"eventually", "ought", "gotta", "'d")

// intentMarkers turn what would be a dropped plan or possibility into a
// hedged intention ("I might move to Boston"): see hedgedIntentConfidence.
// "will" and "going to" count only when the sentence is hedged as well
// ("Maybe I will work at Apple"); "thinking about/of", "considering" and
// "contemplating" only before a gerund or, for the last two, a noun phrase
// ("I'm considering a job at Stripe"). Every other modal still drops the
// clause.
var intentMarkers = set("might", "may", "will", "going", "thinking", "considering",
	"contemplating")

// contextPhrases open a clause with the circumstance its values hold in
// ("At work I use a BlackBerry"); the value is Op.Context. Values in
// different contexts coexist in memor, so the home phone does not replace
// the work phone.
var contextPhrases = func() []struct {
	words []string
	ctx   string
} {
	var out []struct {
		words []string
		ctx   string
	}
	for _, p := range en.ContextPhrases() {
		out = append(out, struct {
			words []string
			ctx   string
		}{p.Words, p.Context})
	}
	return out
}()

// negations mark a clause as negated.
var negations = set("not", "never", "neither", "nor", "nobody", "none", "nothing", "no")

// reporting verbs introduce another speaker's claim.
var reporting = set("said", "says", "say", "told", "tells", "tell", "thinks", "think",
	"believes", "believe", "claims", "claimed", "claim", "mentioned", "mentions", "heard",
	"reckons", "insists", "insisted", "wrote", "writes", "texted", "asked", "asks",
	"suggested", "assumes", "assumed", "according", "reported", "announced", "swears",
	"promised", "guessed", "thought", "believed")

// userHedges are reporting verbs that, with "I" as subject, keep the claim
// as the user's own at reduced confidence ("I think I'm allergic to cats").
var userHedges = set("think", "believe", "guess", "reckon", "suppose", "feel", "thought", "believed")

// conditionals anywhere in a sentence make it hypothetical.
var conditionals = set("if", "unless", "suppose", "supposing", "imagine", "imagining",
	"assuming", "assume", "hypothetically", "pretend", "pretending", "whether", "wish",
	"wished", "wishing", "fantasize", "fantasizing", "daydream", "theoretically")

// questionStarts begin a question even without a question mark.
var questionStarts = set("do", "does", "did", "can", "could", "would", "should", "will",
	"shall", "am", "is", "are", "was", "were", "where", "what", "when", "why", "how", "who",
	"whom", "whose", "which", "have", "has", "may", "might", "must")

// clauseVerbs start a clause whose subject is carried over from the previous
// one ("I got a job and moved to Bangalore").
var clauseVerbs = set("live", "lives", "living", "lived", "moved", "relocated", "settled",
	"work", "works", "working", "worked", "started", "began", "joined", "adopted", "got",
	"quit", "left", "married", "speak", "speaks", "play", "plays", "played", "playing",
	"have", "has", "had", "love", "loves", "like", "likes", "enjoy", "enjoys", "adore",
	"study", "studies", "studying", "bought", "switched", "graduated", "retired", "stopped",
	"became", "went", "am", "use", "uses", "own", "owns", "rescued", "lost", "gave",
	"resigned", "took", "learned", "learnt", "picked", "upgraded", "turned", "converted",
	"dropped", "am", "is", "are", "no", "never", "not", "do", "does", "did", "who",
	"enrolled", "attend", "attends", "eat", "eats", "landed", "accepted", "welcomed")

// diaryVerbs may open a sentence with the subject "I" left out
// ("Just moved to Bangalore!").
var diaryVerbs = set("moved", "relocated", "got", "adopted", "quit", "started", "joined",
	"bought", "switched", "became", "went", "graduated", "retired", "rescued", "landed",
	"settled", "upgraded", "enrolled", "resigned", "welcomed", "married", "turned")

// stopCaps are capitalised words that are never names or places.
var stopCaps = set("i", "the", "a", "an", "my", "our", "he", "she", "we", "they", "it",
	"and", "but", "so", "or", "yesterday", "today", "tomorrow", "last", "next", "this",
	"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "just",
	"since", "in", "on", "at", "for", "who", "also", "now", "then", "not", "no", "his",
	"her", "their", "your", "you", "me", "us", "them", "him", "is", "was", "and", "to")

// pluralToSingular undoes common English plurals.
func pluralToSingular(w string) string {
	switch {
	case w == "fish" || w == "mice":
		if w == "mice" {
			return "mouse"
		}
		return w
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 3:
		return w[:len(w)-1]
	}
	return w
}

// britishToUS normalises spellings inside favorite_ predicate names.
var britishToUS = map[string]string{"colour": "color", "flavour": "flavor", "humour": "humor",
	"favourite": "favorite", "programme": "program", "theatre": "theater", "jewellery": "jewelry"}

// notNames are capitalised words that follow "I'm" without being the
// speaker's name: nationalities, religions and other identities ("I'm
// Canadian, and …").
var notNames = set("american", "canadian", "mexican", "british", "english", "scottish",
	"welsh", "irish", "french", "german", "italian", "spanish", "portuguese", "dutch",
	"belgian", "swiss", "austrian", "swedish", "norwegian", "danish", "finnish", "polish",
	"czech", "russian", "ukrainian", "greek", "turkish", "israeli", "iranian", "iraqi",
	"egyptian", "moroccan", "nigerian", "ghanaian", "kenyan", "ethiopian", "african",
	"indian", "pakistani", "bangladeshi", "chinese", "japanese", "korean", "vietnamese",
	"thai", "filipino", "indonesian", "malaysian", "australian", "brazilian", "argentinian",
	"argentine", "chilean", "colombian", "peruvian", "venezuelan", "cuban", "jamaican",
	"haitian", "puerto", "asian", "european", "latino", "latina", "hispanic", "arab",
	"caribbean", "muslim", "christian", "catholic", "protestant", "jewish", "hindu",
	"buddhist", "sikh", "mormon", "atheist", "agnostic", "gay", "lesbian", "bi", "trans",
	"queer", "ok", "okay", "sorry", "fine", "good", "great", "here", "back", "ready",
	"done", "new", "not", "still", "always", "glad", "happy", "sure", "thankful")

// membershipNouns head organisations one joins without being employed
// there ("joined the chess club").
var membershipNouns = set("club", "clubs", "association", "meetup", "group", "society",
	"community", "league", "network", "forum", "class", "course", "program", "programme",
	"choir", "band", "gym", "committee", "union", "chapter", "circle", "movement", "cohort",
	"waitlist", "workshop", "bootcamp", "webinar", "guild", "team", "crew", "server",
	"channel", "subreddit", "party", "council", "fellowship", "congregation", "church")

// places are well-known countries, US states and cities, recognised when
// the text does not capitalise them ("I moved to new york"); capitalised
// places need no list.
var places = set("afghanistan", "albania", "algeria", "argentina", "armenia", "australia",
	"austria", "bangladesh", "belgium", "bolivia", "brazil", "bulgaria", "cambodia",
	"cameroon", "canada", "chile", "china", "colombia", "costa rica", "croatia", "cuba",
	"cyprus", "czechia", "denmark", "ecuador", "egypt", "england", "estonia", "ethiopia",
	"finland", "france", "georgia", "germany", "ghana", "greece", "guatemala", "hungary",
	"iceland", "india", "indonesia", "iran", "iraq", "ireland", "israel", "italy", "japan",
	"jordan", "kazakhstan", "kenya", "korea", "south korea", "latvia", "lebanon",
	"lithuania", "luxembourg", "malaysia", "mexico", "morocco", "nepal", "netherlands",
	"new zealand", "nigeria", "norway", "pakistan", "panama", "peru", "philippines",
	"poland", "portugal", "romania", "russia", "saudi arabia", "scotland", "senegal",
	"serbia", "singapore", "slovakia", "slovenia", "south africa", "spain", "sri lanka",
	"sweden", "switzerland", "taiwan", "tanzania", "thailand", "tunisia", "turkey",
	"uganda", "ukraine", "uruguay", "usa", "uk", "united states", "united kingdom",
	"venezuela", "vietnam", "wales", "zimbabwe",
	"alabama", "alaska", "arizona", "arkansas", "california", "colorado", "connecticut",
	"delaware", "florida", "hawaii", "idaho", "illinois", "indiana", "iowa", "kansas",
	"kentucky", "louisiana", "maine", "maryland", "massachusetts", "michigan",
	"minnesota", "mississippi", "missouri", "montana", "nebraska", "nevada",
	"new hampshire", "new jersey", "new mexico", "north carolina", "north dakota", "ohio",
	"oklahoma", "oregon", "pennsylvania", "rhode island", "south carolina",
	"south dakota", "tennessee", "texas", "utah", "vermont", "virginia", "washington",
	"west virginia", "wisconsin", "wyoming",
	"new york", "new york city", "nyc", "los angeles", "chicago", "houston", "phoenix",
	"philadelphia", "san antonio", "san diego", "dallas", "austin", "san francisco",
	"seattle", "denver", "boston", "atlanta", "miami", "detroit", "portland",
	"las vegas", "nashville", "toronto", "montreal", "vancouver", "london", "paris",
	"berlin", "madrid", "barcelona", "rome", "milan", "amsterdam", "brussels", "vienna",
	"prague", "warsaw", "budapest", "lisbon", "dublin", "edinburgh", "manchester",
	"stockholm", "oslo", "copenhagen", "helsinki", "zurich", "geneva", "munich",
	"hamburg", "moscow", "istanbul", "athens", "cairo", "lagos", "nairobi",
	"johannesburg", "cape town", "dubai", "tokyo", "osaka", "kyoto", "seoul", "beijing",
	"shanghai", "hong kong", "singapore", "bangkok", "manila", "jakarta", "mumbai",
	"delhi", "new delhi", "bangalore", "bengaluru", "chennai", "hyderabad", "pune",
	"kolkata", "karachi", "lahore", "sydney", "melbourne", "brisbane", "perth",
	"auckland", "mexico city", "sao paulo", "rio de janeiro", "buenos aires", "lima",
	"bogota", "santiago")

// dislikeVerbs state a dislike of their object ("I hate cilantro").
var dislikeVerbs = set("hate", "hates", "dislike", "dislikes", "detest", "detests",
	"loathe", "loathes", "despise", "despises")

// pastVerbs are common irregular past tenses, which never head an object.
var pastVerbs = set("met", "went", "got", "made", "took", "came", "saw", "found", "gave",
	"told", "said", "left", "felt", "knew", "thought", "brought", "bought", "ran", "began")

// embedders take an embedded question ("know if", "wondering whether"),
// which is asked, not stated, and is no condition on the rest.
var embedders = set("know", "knows", "wonder", "wondering", "wondered", "sure", "unsure",
	"see", "ask", "asking", "asked", "check", "checking", "decide", "deciding", "tell",
	"curious", "figure", "out", "learn", "understand", "certain", "doubt", "question")

// honorifics stand before a name without being part of it ("Instructor
// Michele", "Dr. Patel").
var honorifics = set("mr", "mrs", "ms", "miss", "dr", "prof", "professor", "instructor",
	"coach", "uncle", "aunt", "auntie", "grandma", "grandpa", "sir", "madam", "captain",
	"pastor", "reverend", "rev", "officer", "judge", "nurse", "doctor", "teacher", "mentor")

// relationalHeads are nouns that name a part or a manner of something
// else ("the social aspect", "the way"): an object headed by one is only a
// fragment of what was liked.
var relationalHeads = set("aspect", "aspects", "part", "parts", "way", "ways", "fact",
	"thing", "things", "side", "concept", "notion", "sound", "look", "feel", "feeling",
	"kind", "sort", "type", "rest", "bit", "lot", "most", "idea", "ideas", "process")
