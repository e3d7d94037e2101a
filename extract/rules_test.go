package extract

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/internal/corpus"
)

// at is Saturday 2026-07-11 15:04 UTC, the episode time of the table.
var testAt = time.Date(2026, 7, 11, 15, 4, 0, 0, time.UTC)

// render writes an op compactly: "+user lives_in Paris" for an assert,
// "-user works_at " for an end, then " @2026-06-11" when ValidFrom is set,
// " ~" when additive, " ?0.7" when the confidence is not 1 and " #work"
// when a context is set.
func render(o Op) string {
	var b strings.Builder
	if o.Kind == End {
		b.WriteByte('-')
	} else {
		b.WriteByte('+')
	}
	fmt.Fprintf(&b, "%s %s %s", o.Subject, o.Predicate, o.Object)
	if !o.ValidFrom.IsZero() {
		if o.ValidFrom.Hour() == 0 && o.ValidFrom.Minute() == 0 {
			b.WriteString(" @" + o.ValidFrom.Format("2006-01-02"))
		} else {
			b.WriteString(" @" + o.ValidFrom.Format("2006-01-02T15:04"))
		}
	}
	if o.Additive {
		b.WriteString(" ~")
	}
	if o.Confidence != 0 && o.Confidence != 1 {
		fmt.Fprintf(&b, " ?%g", o.Confidence)
	}
	if o.Context != "" {
		b.WriteString(" #" + o.Context)
	}
	return b.String()
}

type ruleCase struct {
	text string
	want []string // rendered ops, in order; nil = nothing may be extracted
}

// ruleCases is the extractor's specification by example. Positives first,
// grouped by predicate; negatives (want nil) at the end.
var ruleCases = []ruleCase{
	// lives_in
	{"I just got a new job and moved to Bangalore", []string{"+user lives_in Bangalore"}},
	{"I live in Seattle.", []string{"+user lives_in Seattle"}},
	{"I moved to San Francisco last week.", []string{"+user lives_in San Francisco @2026-07-04T15:04"}},
	{"We relocated to Lisbon in January.", []string{"+user lives_in Lisbon @2026-01-01"}},
	{"I've lived in Berlin since March 2024.", []string{"+user lives_in Berlin @2024-03-01"}},
	{"I'm based in London these days.", []string{"+user lives_in London"}},
	{"I moved back to Chicago two weeks ago.", []string{"+user lives_in Chicago @2026-06-27T15:04"}},
	{"I moved from Boston to New York City on 2026-07-01.", []string{"+user lives_in New York City @2026-07-01"}},
	{"Just moved to Bangalore!", []string{"+user lives_in Bangalore"}},
	{"I'm living in the Netherlands now.", []string{"+user lives_in Netherlands"}},
	{"I moved to St. Louis last month.", []string{"+user lives_in St. Louis @2026-06-11T15:04"}},
	{"I live in Rio de Janeiro.", []string{"+user lives_in Rio de Janeiro"}},
	{"I moved out of Paris.", []string{"-user lives_in Paris"}},
	{"I no longer live in Denver.", []string{"-user lives_in Denver"}},
	{"I don't live in Austin anymore.", []string{"-user lives_in Austin"}},
	{"I also live in Boston.", []string{"+user lives_in Boston ~"}},
	{"I have lived in Tokyo for 5 years.", []string{"+user lives_in Tokyo @2021-07-11T15:04"}},
	{"Last month I got a new job and moved to Pune.", []string{"+user lives_in Pune @2026-06-11T15:04"}},
	{"I moved to Denver last week for a new job at Denver Health.", []string{"+user lives_in Denver @2026-07-04T15:04", "+user works_at Denver Health @2026-07-04T15:04"}},
	{"We relocated to Austin for my new position at Dell.", []string{"+user lives_in Austin", "+user works_at Dell"}},
	{"I moved to Seattle for my wife's job at Amazon.", []string{"+user lives_in Seattle"}},
	{"I moved to Boston to look for a job at a hospital.", []string{"+user lives_in Boston"}},
	{"I moved to Lyon for a job interview at Renault.", []string{"+user lives_in Lyon"}},
	{"I settled in Porto last year.", []string{"+user lives_in Porto @2025-07-11T15:04"}},
	// works_at / job_title
	{"I work at Google.", []string{"+user works_at Google"}},
	{"I work for Microsoft as a software engineer.", []string{"+user works_at Microsoft", "+user job_title software engineer"}},
	{"I'm a nurse at St. Mary's Hospital.", []string{"+user job_title nurse", "+user works_at St. Mary's Hospital"}},
	{"I'm a software engineer.", []string{"+user job_title software engineer"}},
	{"I work as a barista.", []string{"+user job_title barista"}},
	{"I joined Stripe in May.", []string{"+user works_at Stripe @2026-05-01"}},
	{"I got a job at Amazon last month.", []string{"+user works_at Amazon @2026-06-11T15:04"}},
	{"I started a new job at Shopify on Monday.", []string{"+user works_at Shopify @2026-07-06"}},
	{"I've been working at IBM since 2019.", []string{"+user works_at IBM @2019-01-01"}},
	{"I got promoted to senior manager last week.", []string{"+user job_title senior manager @2026-07-04T15:04"}},
	{"I quit my job.", []string{"-user works_at "}},
	{"I quit my job at Netflix yesterday.", []string{"-user works_at Netflix @2026-07-10T15:04"}},
	{"I left my job at Meta.", []string{"-user works_at Meta"}},
	{"I got laid off from Twitter.", []string{"-user works_at Twitter"}},
	{"I retired last year.", []string{"-user works_at  @2025-07-11T15:04"}},
	{"I no longer work at Oracle.", []string{"-user works_at Oracle"}},
	{"I also work at Starbucks on weekends.", []string{"+user works_at Starbucks ~"}},
	{"My job title is Staff Engineer.", []string{"+user job_title Staff Engineer"}},
	{"I became a teacher in 2020.", []string{"+user job_title teacher @2020-01-01"}},
	// studies_at
	{"I study at MIT.", []string{"+user studies_at MIT"}},
	{"I'm studying computer science at Stanford.", []string{"+user studies_at Stanford"}},
	{"I'm a PhD student at Oxford.", []string{"+user studies_at Oxford"}},
	{"I graduated from Harvard in 2024.", []string{"-user studies_at Harvard @2024-01-01"}},
	{"I enrolled at UCLA last fall.", []string{"+user studies_at UCLA"}},
	// marital_status
	{"I got married last week.", []string{"+user marital_status married @2026-07-04T15:04"}},
	{"I'm married.", []string{"+user marital_status married"}},
	{"I'm single again.", []string{"+user marital_status single"}},
	{"We got engaged on July 4th!", []string{"+user marital_status engaged @2026-07-04"}},
	{"I got divorced in 2023.", []string{"+user marital_status divorced @2023-01-01"}},
	{"I'm no longer married.", []string{"-user marital_status married"}},
	{"I married Sam in June.", []string{"+user marital_status married @2026-06-01"}},
	{"We tied the knot last month.", []string{"+user marital_status married @2026-06-11T15:04"}},
	// diet
	{"I'm vegan.", []string{"+user diet vegan"}},
	{"I am a vegetarian.", []string{"+user diet vegetarian"}},
	{"I only eat meat.", []string{"+user diet carnivore"}},
	{"I eat only meat these days.", []string{"+user diet carnivore"}},
	{"I went vegan last month.", []string{"+user diet vegan @2026-06-11T15:04"}},
	{"I've been vegetarian for 10 years.", []string{"+user diet vegetarian @2016-07-11T15:04"}},
	{"I'm on a keto diet.", []string{"+user diet keto"}},
	{"I'm pescatarian.", []string{"+user diet pescatarian"}},
	{"I'm not vegan anymore.", []string{"-user diet vegan"}},
	{"I stopped being vegetarian last year.", []string{"-user diet vegetarian @2025-07-11T15:04"}},
	// uses_device
	{"I use an iPhone 13.", []string{"+user uses_device iPhone 13"}},
	{"I just bought a Samsung Galaxy S23.", []string{"+user uses_device Samsung Galaxy S23"}},
	{"My phone is a Pixel 8 Pro.", []string{"+user uses_device Pixel 8 Pro"}},
	{"I switched to Android.", []string{"+user uses_device Android"}},
	{"I switched from iPhone to Android last month.", []string{"+user uses_device Android @2026-06-11T15:04"}},
	// favorites
	{"My favorite color is blue.", []string{"+user favorite_color blue"}},
	{"My favourite colour is green.", []string{"+user favorite_color green"}},
	{"My favorite movie is The Matrix.", []string{"+user favorite_movie The Matrix"}},
	{"My favorite food is sushi.", []string{"+user favorite_food sushi"}},
	{"Blue is my favorite color.", []string{"+user favorite_color Blue"}},
	{"My favorite TV show is Breaking Bad.", []string{"+user favorite_tv_show Breaking Bad"}},
	{"My favourite ice cream flavour is pistachio.", []string{"+user favorite_ice_cream_flavor pistachio"}},
	{"My favorite book is Pride and Prejudice.", []string{"+user favorite_book Pride and Prejudice"}},
	// plays_instrument
	{"I play the violin.", []string{"+user plays_instrument violin"}},
	{"I play guitar and piano.", []string{"+user plays_instrument guitar", "+user plays_instrument piano"}},
	{"I started playing the cello last year.", []string{"+user plays_instrument cello @2025-07-11T15:04"}},
	{"I no longer play the violin.", []string{"-user plays_instrument violin"}},
	{"I stopped playing the drums.", []string{"-user plays_instrument drums"}},
	{"I used to play the trumpet.", []string{"-user plays_instrument trumpet"}},
	{"I'm a guitarist.", []string{"+user plays_instrument guitar"}},
	{"I learned to play the electric guitar in 2020.", []string{"+user plays_instrument electric guitar @2020-01-01"}},
	// speaks_language
	{"I speak Spanish.", []string{"+user speaks_language Spanish"}},
	{"I speak English, French and German.", []string{"+user speaks_language English", "+user speaks_language French", "+user speaks_language German"}},
	{"I'm fluent in Japanese.", []string{"+user speaks_language Japanese"}},
	{"I can speak a little Italian.", []string{"+user speaks_language Italian"}},
	{"I'm a native Portuguese speaker.", []string{"+user speaks_language Portuguese"}},
	{"My native language is Tamil.", []string{"+user speaks_language Tamil"}},
	// pets
	{"I have a dog named Max.", []string{"+user has_pet dog", "+user pet_name Max"}},
	{"I adopted a cat called Luna last weekend.", []string{"+user has_pet cat @2026-07-04", "+user pet_name Luna @2026-07-04"}},
	{"We got two kittens named Mochi and Tofu.", []string{"+user has_pet kitten", "+user pet_name Mochi", "+user pet_name Tofu"}},
	{"I have a dog and a cat.", []string{"+user has_pet dog", "+user has_pet cat"}},
	{"My dog Rex loves the beach.", []string{"+user has_pet dog", "+user pet_name Rex"}},
	{"My cat's name is Whiskers.", []string{"+user has_pet cat", "+user pet_name Whiskers"}},
	{"I rescued a golden retriever.", []string{"+user has_pet golden retriever"}},
	{"My dog Buddy died last month.", []string{"-user has_pet dog @2026-06-11T15:04", "-user pet_name Buddy @2026-06-11T15:04"}},
	{"I have a hamster.", []string{"+user has_pet hamster"}},
	// allergies
	{"I'm allergic to peanuts.", []string{"+user allergic_to peanuts"}},
	{"I'm allergic to cats, shellfish and penicillin.", []string{"+user allergic_to cats", "+user allergic_to shellfish", "+user allergic_to penicillin"}},
	{"I have a severe peanut allergy.", []string{"+user allergic_to peanut"}},
	{"I have an allergy to latex.", []string{"+user allergic_to latex"}},
	{"I think I'm allergic to gluten.", []string{"+user allergic_to gluten ?0.7"}},
	// likes
	{"I love hiking.", []string{"+user likes hiking"}},
	{"I like jazz and classical music.", []string{"+user likes jazz", "+user likes classical music"}},
	{"I love sushi.", []string{"+user likes_food sushi"}},
	{"I really enjoy Italian food.", []string{"+user likes_food Italian food"}},
	{"I'm a big fan of the Beatles.", []string{"+user likes Beatles"}},
	{"I'm into rock climbing.", []string{"+user likes rock climbing"}},
	{"I love eating tacos.", []string{"+user likes_food tacos"}},
	{"I don't like coffee anymore.", []string{"-user likes_food coffee"}},
	{"I like hiking and love swimming.", []string{"+user likes hiking", "+user likes swimming"}},
	// relations and other people's facts
	{"My brother Alex adopted a golden retriever named Buddy last month.", []string{
		"+user brother Alex", "+Alex has_pet golden retriever @2026-06-11T15:04", "+Alex pet_name Buddy @2026-06-11T15:04"}},
	{"My friend Sarah lives in Austin.", []string{"+user friend Sarah", "+Sarah lives_in Austin"}},
	{"My sister Maya is vegan.", []string{"+user sister Maya", "+Maya diet vegan"}},
	{"My best friend Tom works at Apple.", []string{"+user friend Tom", "+Tom works_at Apple"}},
	{"My mom Linda speaks French.", []string{"+user mother Linda", "+Linda speaks_language French"}},
	{"My wife Emma plays the piano.", []string{"+user wife Emma", "+Emma plays_instrument piano"}},
	{"I have a sister named Priya.", []string{"+user sister Priya"}},
	{"Alex is my brother.", []string{"+user brother Alex"}},
	{"My husband's name is David.", []string{"+user husband David"}},
	{"My colleague Raj moved to Dublin last year.", []string{"+user colleague Raj", "+Raj lives_in Dublin @2025-07-11T15:04"}},
	{"My brother Alex lives in Austin. He adopted a dog.", []string{"+user brother Alex", "+Alex lives_in Austin", "+Alex has_pet dog"}},
	{"My brother Alex got married. My brother lives in Austin.", []string{"+user brother Alex", "+Alex marital_status married", "+Alex lives_in Austin"}},
	{"I went hiking with my friend Sarah.", []string{"+user friend Sarah"}},
	{"My friends Tom and Ann live in Oslo.", []string{"+user friend Tom", "+user friend Ann", "+Tom lives_in Oslo"}},
	{"My younger sister Mia, who lives in Rome, got engaged.", []string{"+user sister Mia", "+Mia lives_in Rome", "+Mia marital_status engaged"}},
	{"My son Leo is allergic to nuts.", []string{"+user son Leo", "+Leo allergic_to nuts"}},
	{"I live with my partner Jordan in Toronto.", []string{"+user partner Jordan", "+user lives_in Toronto"}},
	{"I'm a huge fan of Taylor Swift.", []string{"+user likes Taylor Swift"}},
	{"I'm engaged to my girlfriend Mia.", []string{"+user partner Mia", "+user marital_status engaged"}},
	{"I play the piano, but I don't play guitar.", []string{"+user plays_instrument piano"}},
	{"I'm allergic to cats but I have a dog named Rex.", []string{"+user allergic_to cats", "+user has_pet dog", "+user pet_name Rex"}},
	{"Yesterday I adopted a cat.", []string{"+user has_pet cat @2026-07-10T15:04"}},
	// contexts: values that coexist
	{"At work I use a BlackBerry.", []string{"+user uses_device BlackBerry #work"}},
	{"At home I use a Pixel 8.", []string{"+user uses_device Pixel 8 #home"}},
	{"At work, I use an iPhone 16 now.", []string{"+user uses_device iPhone 16 #work"}},
	{"On weekends I live in Tahoe.", []string{"+user lives_in Tahoe #weekends"}},
	{"On weekdays I work at Google.", []string{"+user works_at Google #weekdays"}},
	{"At the office, I use a BlackBerry.", []string{"+user uses_device BlackBerry #work"}},
	{"For work I use a Galaxy S24.", []string{"+user uses_device Galaxy S24 #work"}},
	{"During the week I live in Boston.", []string{"+user lives_in Boston #weekdays"}},
	{"Honestly, at home I speak Spanish.", []string{"+user speaks_language Spanish #home"}},
	{"At home, my wife and I speak Spanish.", []string{"+user speaks_language Spanish #home"}},
	{"On weekends I'm a barista at Blue Bottle.", []string{"+user job_title barista #weekends", "+user works_at Blue Bottle #weekends"}},
	{"At work I use a BlackBerry and at home I use a Pixel 8.", []string{"+user uses_device BlackBerry #work", "+user uses_device Pixel 8 #home"}},
	{"I live in Paris and at home I speak French.", []string{"+user lives_in Paris", "+user speaks_language French #home"}},
	{"At work my colleague Raj uses a BlackBerry.", []string{"+user colleague Raj", "+Raj uses_device BlackBerry #work"}},
	{"At home I no longer use an iPhone.", []string{"-user uses_device iPhone #home"}},
	// hedged intentions: proposed at low confidence on single-valued facts
	{"I think I might move to Boston.", []string{"+user lives_in Boston ?0.3"}},
	{"Maybe I will work at Apple.", []string{"+user works_at Apple ?0.3"}},
	{"I might switch to Android.", []string{"+user uses_device Android ?0.3"}},
	{"I'm thinking about moving to Lisbon.", []string{"+user lives_in Lisbon ?0.3"}},
	{"I'm considering a job at Stripe.", []string{"+user works_at Stripe ?0.3"}},
	{"I might move to Paris.", []string{"+user lives_in Paris ?0.3"}},
	{"I may relocate to Denver.", []string{"+user lives_in Denver ?0.3"}},
	{"I'm considering a move to Lisbon.", []string{"+user lives_in Lisbon ?0.3"}},
	{"I think I'll switch to a Pixel 8.", []string{"+user uses_device Pixel 8 ?0.3"}},
	{"Maybe I'm going to move to Denver.", []string{"+user lives_in Denver ?0.3"}},
	{"I'm thinking of going vegan.", []string{"+user diet vegan ?0.3"}},
	{"I'm considering working at Netflix.", []string{"+user works_at Netflix ?0.3"}},
	{"I might also work at Starbucks.", []string{"+user works_at Starbucks ?0.3"}},
	{"Perhaps I'll join Stripe.", []string{"+user works_at Stripe ?0.3"}},
	{"At work I might switch to Android.", []string{"+user uses_device Android ?0.3 #work"}},
	{"I live in Seattle but I might move to Boston.", []string{"+user lives_in Seattle", "+user lives_in Boston ?0.3"}},
	{"My brother Alex might move to Boston.", []string{"+user brother Alex", "+Alex lives_in Boston ?0.3"}},
	// several facts in one message
	{"I live in Seattle, work at Amazon and play the guitar.", []string{"+user lives_in Seattle", "+user works_at Amazon", "+user plays_instrument guitar"}},
	{"I'm vegan and I'm allergic to soy.", []string{"+user diet vegan", "+user allergic_to soy"}},
	{"I moved to Denver in March and adopted a puppy named Scout.", []string{"+user lives_in Denver @2026-03-01", "+user has_pet puppy @2026-03-01", "+user pet_name Scout @2026-03-01"}},
	{"I live in Paris, not London.", []string{"+user lives_in Paris"}},
	{"I told my sister Maya that I moved to Rome.", []string{"+user sister Maya", "+user lives_in Rome"}},
	{"Ich? No: I moved to Vienna.\nI speak German.", []string{"+user lives_in Vienna", "+user speaks_language German"}},

	// issue 4's phrases verbatim, and probes of the audit
	{"Alex, my brother, lives in Austin.", []string{"+user brother Alex", "+Alex lives_in Austin"}},
	{"Sarah, my best friend, is vegan.", []string{"+user friend Sarah", "+Sarah diet vegan"}},
	{"Alex, my brother, moved to Dallas last month.", []string{"+user brother Alex", "+Alex lives_in Dallas @2026-06-11T15:04"}},
	{"I moved to Oslo on 2026-07-11.", []string{"+user lives_in Oslo @2026-07-11"}},
	{"On 2026-07-11 I moved to Oslo.", []string{"+user lives_in Oslo @2026-07-11"}},
	{"Since March 2024 I have been working at Stripe.", []string{"+user works_at Stripe @2024-03-01"}},
	{"I've been vegan since March 2024.", []string{"+user diet vegan @2024-03-01"}},
	{"In January I started playing the piano.", []string{"+user plays_instrument piano @2026-01-01"}},
	{"Last weekend I adopted two cats named Luna and Leo.", []string{"+user has_pet cat @2026-07-04", "+user pet_name Luna @2026-07-04", "+user pet_name Leo @2026-07-04"}},
	{"I have two cats named Luna and Leo and a dog named Rex.", []string{"+user has_pet cat", "+user pet_name Luna", "+user pet_name Leo", "+user has_pet dog", "+user pet_name Rex"}},
	{"I moved out of Paris last month.", []string{"-user lives_in Paris @2026-06-11T15:04"}},
	{"I quit Google last month.", []string{"-user works_at Google @2026-06-11T15:04"}},
	{"I stopped being vegan in January.", []string{"-user diet vegan @2026-01-01"}},
	{"I used to live in Paris but now I live in Rome.", []string{"-user lives_in Paris", "+user lives_in Rome"}},
	{"I no longer work at Google; I work at Apple now.", []string{"-user works_at Google", "+user works_at Apple"}},
	{"My brother Alex no longer lives in Austin.", []string{"+user brother Alex", "-Alex lives_in Austin"}},
	{"My friend Sarah lives in Austin and she is vegan.", []string{"+user friend Sarah", "+Sarah lives_in Austin", "+Sarah diet vegan"}},
	{"My friend Sarah, who lives in Austin, is a nurse.", []string{"+user friend Sarah", "+Sarah lives_in Austin", "+Sarah job_title nurse"}},
	{"I work as a nurse at Mercy Hospital.", []string{"+user job_title nurse", "+user works_at Mercy Hospital"}},
	{"I eat only plants.", []string{"+user diet vegan"}},
	{"I only eat fish.", []string{"+user diet pescatarian"}},
	{"I use an iPhone 15 Pro Max.", []string{"+user uses_device iPhone 15 Pro Max"}},
	{"I got a new Pixel 9 last weekend.", []string{"+user uses_device Pixel 9 @2026-07-04"}},
	{"My favorite band is Radiohead.", []string{"+user favorite_band Radiohead"}},
	{"I speak fluent German and a little Dutch.", []string{"+user speaks_language German", "+user speaks_language Dutch"}},
	{"I am allergic to penicillin and bee stings.", []string{"+user allergic_to penicillin", "+user allergic_to bee stings"}},
	// other people's statements: the relation is the user's, the claim is not
	{"My friend Sarah said she is vegan.", []string{"+user friend Sarah"}},
	{"Tom, my colleague, said I live in Paris.", []string{"+user colleague Tom"}},
	{"My brother Alex doesn't live in Austin.", []string{"+user brother Alex"}},

	// Negatives: nothing may be extracted.
	{"Do you live in Paris?", nil},
	{"Do you live in Paris", nil},
	{"Where do you work?", nil},
	{"Have you ever been to Rome?", nil},
	{"Did I tell you I moved to Paris?", nil},
	{"If I moved to Paris, I would learn French.", nil},
	{"If I had a dog, I'd name it Max.", nil},
	{"Imagine I lived in Tokyo.", nil},
	{"I wish I lived in Barcelona.", nil},
	{"Suppose I quit my job.", nil},
	{"I don't live in Paris.", nil},
	{"I do not work at Google.", nil},
	{"I'm not married.", nil},
	{"I'm not vegan.", nil},
	{"I never played the violin.", nil},
	{"I don't have a dog.", nil},
	{"I have no pets.", nil},
	{"I'm not allergic to anything.", nil},
	{"I don't speak French.", nil},
	{"I didn't move to Berlin.", nil},
	{"I'm going to move to Paris next month.", nil},
	{"I will start at Google next week.", nil},
	{"I want to live in Japan.", nil},
	{"I'd love to have a cat.", nil},
	{"I'm planning to adopt a dog.", nil},
	{"We're moving to Denver tomorrow.", nil},
	{"I hope to get a job at Google.", nil},
	{"I should learn Spanish.", nil},
	{"You live in Paris.", nil},
	{"She said she lives in Paris.", nil},
	{"Alex said I live in Paris.", nil},
	{"My mom thinks I'm vegan.", nil},
	{"According to Sarah, I'm moving to Rome.", nil},
	{"\"I live in Paris,\" Alex said.", nil},
	{"My brother lives in Austin.", nil},
	{"Iceland is beautiful.", nil},
	{"Illinois has great pizza.", nil},
	{"The weather in Paris is nice.", nil},
	{"Paris is lovely in the spring.", nil},
	{"I lived in Paris.", nil},
	{"I was vegan in college.", nil},
	{"I love it.", nil},
	{"I like that.", nil},
	{"I love you.", nil},
	{"I like to think so.", nil},
	{"I play tennis on Sundays.", nil},
	{"I got a new phone.", nil},
	{"I'm a morning person.", nil},
	{"I love vegan food.", []string{"+user likes_food vegan food"}},
	{"I work from home.", nil},
	{"I'm from Canada.", []string{"+user from Canada"}},
	{"Thanks, that helps!", nil},
	{"What's your favorite color?", nil},
	{"Can you recommend a restaurant in Rome?", nil},
	{"How do I move to Canada?", nil},
	{"Is it hard to learn Japanese?", nil},
	{"I have a question about Python.", nil},
	{"I went to Paris last summer.", nil},
	{"I'm going to Rome next week.", nil},
	{"My brother doesn't live in Austin.", nil},
	{"I'm single-handedly running the project.", nil},
	{"I quit smoking.", nil},
	{"I'm learning Italian.", nil},
	{"I'll move to Berlin next year.", nil},
	{"Maybe I'll get a cat.", nil},
	{"I would never eat meat.", nil},
	{"I'm reading a book about dogs.", nil},
	{"I love my job at Google.", nil},
	{"I have a meeting with Sarah tomorrow.", nil},
	{"I'm working on a project in Paris.", nil},
	{"My brother Alex said he's moving to Paris.", []string{"+user brother Alex"}},
	{"I don't eat meat.", nil},
	{"I'm not sure if I live in Paris.", nil},
	{"Sarah is allergic to nuts.", nil},
	{"He moved to Paris.", nil},
	{"I haven't lived in Rome for years.", nil},
	{"I joined a gym.", nil},
	{"Whether I move to Boston depends on the job.", nil},
	// not contexts
	{"I work at home.", nil},
	{"At home I relax.", nil},
	{"At home is where I relax.", nil},
	{"At Home Depot I work as a cashier.", nil},
	{"At work you use Slack.", nil},
	{"On weekends do you live in Tahoe?", nil},
	// hedges that stay plans, negations, questions and hypotheticals
	{"If I moved to Paris I would learn French.", nil},
	{"If I might move to Boston, I'd sell the car.", nil},
	{"Might I move to Boston?", nil},
	{"Should I switch to Android?", nil},
	{"Maybe I will work at Apple?", nil},
	{"I might not move to Boston.", nil},
	{"Maybe I won't work at Apple.", nil},
	{"I'm not thinking about moving to Lisbon.", nil},
	{"I might no longer work at Google.", nil},
	{"I will work at Apple.", nil},
	{"I'll move to Berlin.", nil},
	{"I might move to Boston next year.", nil},
	{"I'm thinking about dinner.", nil},
	{"I'm thinking about a trip to Lisbon.", nil},
	{"I'm moving to Denver.", nil},
	{"I might get a cat.", nil},
	{"I might learn Spanish.", nil},
	{"I might like sushi.", nil},
	{"I might want to move to Boston.", nil},
	{"Alex might move to Boston.", nil},
	{"My mom thinks I might move to Boston.", nil},
	{"I'm considering it.", nil},
	{"My friend said I should move to Paris.", nil},
	{"Sarah told me she lives in Austin.", nil},
	{"If my brother Alex moves to Paris, I'll visit.", nil},
	{"What if I moved to Paris?", nil},
	{"Let's say I lived in Paris.", nil},
	{"Pretend I live in Paris.", nil},
	{"In my dream I lived in Tokyo.", nil},
	{"I dream of living in Paris.", nil},
	{"I would like to live in Paris.", nil},
	{"My wife thinks we should move to Denver.", nil},
	{"I don't think I live in Paris.", nil},
	{"I'm not sure whether I'm allergic to peanuts.", nil},
	{"I never lived in Paris.", nil},
	{"I'm not living in Paris.", nil},
	{"I wasn't working at Google.", nil},
	{"I can't speak French.", nil},
	{"I'm not a fan of jazz.", nil},
	{"I don't have any allergies.", nil},
	{"I have never had a dog.", nil},
	{"I'm not allowed to have a dog.", nil},
	{"None of us live in Paris.", nil},
	{"Nobody in my family speaks French.", nil},
	{"He said I live in Paris.", nil},
	{"They said I'm vegan.", nil},
	{"My doctor says I'm allergic to peanuts.", nil},
	{"Tom lives in Paris.", nil},
	{"I live in Paris?", nil},
	{"Would I like Paris?", nil},
	{"", nil},
	{"!!! ???", nil},
}

func TestRuleExtractorTable(t *testing.T) {
	x := NewRuleExtractor()
	for _, tc := range ruleCases {
		t.Run(tc.text, func(t *testing.T) {
			ops, err := x.Extract(context.Background(), tc.text, testAt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range ops {
				got = append(got, render(o))
				if !strings.Contains(tc.text, o.Quote) || o.Quote == "" {
					t.Errorf("quote %q is not a substring of the text", o.Quote)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Extract(%q)\n got: %q\nwant: %q", tc.text, got, tc.want)
			}
		})
	}
}

// Every op's quote is a verbatim substring, on arbitrary input too, and the
// extractor is deterministic.
func FuzzRuleExtractor(f *testing.F) {
	for _, tc := range ruleCases {
		f.Add(tc.text)
	}
	for _, tx := range corpus.MustTexts() {
		f.Add(tx.Body)
	}
	x := NewRuleExtractor()
	f.Fuzz(func(t *testing.T, text string) {
		ops, err := x.Extract(context.Background(), text, testAt)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := x.Extract(context.Background(), text, testAt)
		if len(again) != len(ops) {
			t.Fatalf("not deterministic")
		}
		for i, o := range ops {
			if o.Quote == "" || !strings.Contains(text, o.Quote) {
				t.Fatalf("quote %q not in text", o.Quote)
			}
			if o.Subject == "" || o.Predicate == "" || (o.Kind == Assert && o.Object == "") {
				t.Fatalf("incomplete op %+v", o)
			}
			if o.ValidFrom.After(testAt) {
				t.Fatalf("op in the future: %+v", o)
			}
			if render(o) != render(again[i]) {
				t.Fatalf("not deterministic: %v vs %v", render(o), render(again[i]))
			}
		}
	})
}

func TestRuleExtractorContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewRuleExtractor().Extract(ctx, "I live in Paris.", testAt); err == nil {
		t.Fatal("want an error from a cancelled context")
	}
}

// Fenced recall fed back through StripFenced teaches nothing.
func TestRuleExtractorIgnoresFencedRecall(t *testing.T) {
	text := "Thanks! " + Fence("I live in Paris. I work at Google.") + " I moved to Rome."
	ops, err := NewRuleExtractor().Extract(context.Background(), StripFenced(text), testAt)
	if err != nil || len(ops) != 1 || render(ops[0]) != "+user lives_in Rome" {
		t.Fatalf("ops = %v, %v", ops, err)
	}
}

func TestRuleExtractorCounts(t *testing.T) {
	pos, neg := 0, 0
	for _, tc := range ruleCases {
		if tc.want == nil {
			neg++
		} else {
			pos++
		}
	}
	if pos+neg < 150 {
		t.Fatalf("table has %d sentences, want ≥ 150", pos+neg)
	}
	t.Logf("table: %d cases, %d positive, %d negative", pos+neg, pos, neg)
}

func BenchmarkRuleExtractor(b *testing.B) {
	x := NewRuleExtractor()
	ctx := context.Background()
	var texts []string
	for _, tc := range ruleCases {
		texts = append(texts, tc.text)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, s := range texts {
			if _, err := x.Extract(ctx, s, testAt); err != nil {
				b.Fatal(err)
			}
		}
		n += len(texts)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "sentences/s")
}

// TestExtractKnown: names known from earlier episodes make a bare name a
// subject; without them the sentence is someone else's news and yields
// nothing.
func TestExtractKnown(t *testing.T) {
	at := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	x := NewRuleExtractor()
	ops, err := x.ExtractKnown(context.Background(), "Alex moved to Dallas.", at, []string{"Alex"})
	if err != nil || len(ops) != 1 || ops[0].Subject != "Alex" || ops[0].Predicate != "lives_in" || ops[0].Object != "Dallas" {
		t.Fatalf("with known names: %+v %v", ops, err)
	}
	ops, err = x.Extract(context.Background(), "Alex moved to Dallas.", at)
	if err != nil || len(ops) != 0 {
		t.Fatalf("without known names: %+v %v", ops, err)
	}
}
